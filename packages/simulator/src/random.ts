/**
 * SeededRandom is a small deterministic pseudo-random generator (mulberry32): the same seed gives
 * the same sequence on every machine, so a simulation is reproducible. Not for cryptography.
 *
 * @example
 * const random = new SeededRandom(42);
 * const u = random.next();            // in [0, 1)
 * const gapMs = random.exponential(0.1);
 */
export class SeededRandom {
  private state: number;

  /** Creates a generator from `seed` (any finite number; its low 32 bits are used). */
  constructor(seed: number) {
    this.state = seed >>> 0;
  }

  /** next returns a number in [0, 1) with 32 random bits. */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** exponential returns a gap drawn from the exponential distribution with `ratePerMs` (mean 1 / ratePerMs). */
  exponential(ratePerMs: number): number {
    return -Math.log(1 - this.next()) / ratePerMs;
  }
}

/**
 * ZipfSampler draws key indices 0..count-1 with probability proportional to 1 / (i + 1)^exponent
 * (exponent 0: uniform). It precomputes the cumulative weights once; each draw is a binary search.
 */
export class ZipfSampler {
  private readonly cumulative: Float64Array;

  /** Creates a sampler over `count` keys (at least 1) with the given `exponent` (at least 0). */
  constructor(count: number, exponent: number) {
    this.cumulative = new Float64Array(count);
    let total = 0;
    for (let i = 0; i < count; i++) {
      total += 1 / Math.pow(i + 1, exponent);
      this.cumulative[i] = total;
    }
    for (let i = 0; i < count; i++) this.cumulative[i] = this.cumulative[i]! / total;
  }

  /** sample returns the key index that `u` (in [0, 1)) falls on. */
  sample(u: number): number {
    const c = this.cumulative;
    let lo = 0;
    let hi = c.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (c[mid]! > u) hi = mid;
      else lo = mid + 1;
    }
    return lo;
  }
}

/**
 * uniformAt returns a number in (0, 1) that depends on `seed`, `stream` and `index` alone (a hash,
 * not a sequence): the draw for one call is the same whatever else was drawn before, so every
 * lane of a run sees the same call take the same time, in the same tier.
 */
export function uniformAt(seed: number, stream: number, index: number): number {
  const h = mix32(mix32((seed >>> 0) ^ Math.imul(stream + 1, 0x9e3779b9)) ^ (index >>> 0));
  return (mix32(h + Math.floor(index / 4294967296)) + 0.5) / 4294967296;
}

/** Chris Wellons' lowbias32: a 32-bit mixing function with every input bit reaching every output bit. */
function mix32(value: number): number {
  let x = value >>> 0;
  x ^= x >>> 16;
  x = Math.imul(x, 0x7feb352d);
  x ^= x >>> 15;
  x = Math.imul(x, 0x846ca68b);
  x ^= x >>> 16;
  return x >>> 0;
}
