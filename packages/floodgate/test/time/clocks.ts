import { decide, type Algorithm } from '../../src/index.js';
import type { PolicySpec } from '../support/policies.js';
import { limitOf } from '../support/policies.js';
import { sweepCount } from '../support/sweep.js';

/**
 * Random is a seeded PRNG (mulberry32): the same seed gives the same run, so a failure names the
 * seed that reproduces it (`FLOODGATE_TIME_SEED=<seed>`).
 */
export class Random {
  private state: number;

  constructor(readonly seed: number) {
    this.state = seed >>> 0;
  }

  /** next returns a float in [0, 1). */
  next(): number {
    let t = (this.state = (this.state + 0x6d2b79f5) >>> 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** between returns a float in [lo, hi). */
  between(lo: number, hi: number): number {
    return lo + (hi - lo) * this.next();
  }

  /** int returns a whole number in [lo, hi]. */
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1));
  }

  /** pick returns one of `items`. */
  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)]!;
  }
}

/**
 * seedsFrom returns the seeds a seeded test runs. FLOODGATE_TIME_SEED (one seed, or several split by
 * commas) reproduces a run: those seeds alone. Otherwise `known` (seeds that once found a failure,
 * kept as fixed cases) and then fresh ones: one, or FLOODGATE_SWEEP of them (docs/development.md, "Sweeping the randomised tests").
 */
export function seedsFrom(known: readonly number[] = [], env: NodeJS.ProcessEnv = process.env): number[] {
  const given = env.FLOODGATE_TIME_SEED;
  if (given !== undefined && given !== '') return given.split(',').map((s) => Number(s) >>> 0);
  const fresh = Array.from({ length: sweepCount(env) }, () => (Math.random() * 2 ** 32) >>> 0);
  return [...known, ...fresh];
}

/** ClockStep moves a node's clock by `byMs` (negative: back) at real time `atMs`. */
export interface ClockStep {
  readonly atMs: number;
  readonly byMs: number;
}

/** NodeClock is one node's clock: real time plus `offsetMs`, moved by each of its steps once due. */
export interface NodeClock {
  readonly offsetMs: number;
  readonly steps: readonly ClockStep[];
}

/** offsetAt returns how far the node's clock is off real time at `realMs`. */
export function offsetAt(node: NodeClock, realMs: number): number {
  let offsetMs = node.offsetMs;
  for (const step of node.steps) if (realMs >= step.atMs) offsetMs += step.byMs;
  return offsetMs;
}

/** clockAt returns the node's reading at real time `realMs`. */
export function clockAt(node: NodeClock, realMs: number): number {
  return realMs + offsetAt(node, realMs);
}

/** Request is one request of a stream: when (real time), through which node, what cost, consume or reserve. */
export interface Request {
  readonly realMs: number;
  readonly node: number;
  readonly cost: number;
  /** For a reserve: the longest wait accepted, in ms; undefined for a consume. */
  readonly maxWaitMs?: number;
}

/** Admitted is a request let through, at the real time it proceeds (a reservation: after its wait). */
export interface Admitted {
  readonly realMs: number;
  readonly cost: number;
  /** Its node's clock reading when it was decided. */
  readonly clockMs: number;
}

/**
 * runShared runs `requests` (in real-time order) on one key whose state every node shares (the
 * pure cells, as a store holds them), each node stamping its requests with its own clock, and
 * returns what was admitted, in real-time order.
 */
export function runShared(algorithm: Algorithm, nodes: readonly NodeClock[], requests: readonly Request[]): Admitted[] {
  let state: Float64Array | undefined;
  const admitted: Admitted[] = [];
  for (const r of requests) {
    const nowMs = clockAt(nodes[r.node]!, r.realMs);
    if (r.maxWaitMs !== undefined && algorithm.reserve !== undefined) {
      if (state === undefined) {
        state = new Float64Array(algorithm.width);
        algorithm.init(state, 0, nowMs);
      }
      const waitMs = algorithm.reserve(state, 0, nowMs, r.cost, r.maxWaitMs);
      if (waitMs >= 0) admitted.push({ realMs: r.realMs + waitMs, cost: r.cost, clockMs: nowMs });
      continue;
    }
    const step = decide(algorithm, state, nowMs, r.cost);
    state = step.state;
    if (step.decision.allowed) admitted.push({ realMs: r.realMs, cost: r.cost, clockMs: nowMs });
  }
  return admitted.sort((a, b) => a.realMs - b.realMs);
}

/** Spread is the range of clock offsets a run saw, over every node before and after its step. */
export interface Spread {
  readonly minOffsetMs: number;
  readonly maxOffsetMs: number;
}

/** spreadOf returns the range of offsets `nodes` take at any time. */
export function spreadOf(nodes: readonly NodeClock[]): Spread {
  const offsets = nodes.flatMap((n) => [n.offsetMs, ...n.steps.map((s) => offsetAt(n, s.atMs))]);
  return { minOffsetMs: Math.min(...offsets), maxOffsetMs: Math.max(...offsets) };
}

/** perMsOf returns the sustained rate of a bucket or GCRA spec, in cost per ms. */
export function perMsOf(spec: PolicySpec): number {
  switch (spec.kind) {
    case 'tokenBucket':
    case 'leakyBucket':
      return spec.perSecond / 1000;
    case 'gcra':
      return spec.rate / spec.periodMs;
    default:
      return spec.limit / spec.windowMs;
  }
}

/**
 * excessOf returns how far `admitted` goes beyond what `spec` promises under clocks spread over
 * `spread` (0 or less: within), with where it happened. The promises, stated in each policy's TSDoc:
 * - buckets and GCRA: in any real span [a, b], at most limit + rate x (b - a + skewSpreadMs);
 * - sliding log: at most limit in any real span shorter than windowMs - skewSpreadMs;
 * - fixed window and weighted counter: at most limit in each aligned window shrunk by the skews,
 *   [k windowMs - minOffsetMs, (k + 1) windowMs - maxOffsetMs);
 * - sub-window counter: the same over any n consecutive sub-windows.
 */
export function excessOf(
  spec: PolicySpec,
  admitted: readonly Admitted[],
  spread: Spread,
): { excess: number; where: string } {
  const skewMs = spread.maxOffsetMs - spread.minOffsetMs;
  const limit = limitOf(spec);
  switch (spec.kind) {
    case 'tokenBucket':
    case 'leakyBucket':
    case 'gcra': {
      // GCRA compares times with a 1 µs tolerance: one more rate x 1 µs. Float rounding of the
      // times behind the admissions in the span moves them by up to roundingMs (see there).
      const perMs = perMsOf(spec);
      const ulpMs = ulpOf(magnitudeOf(admitted, spread));
      return worstSpan(
        admitted,
        Infinity,
        (spanMs, count) => limit + perMs * (spanMs + skewMs + 1e-3 + roundingMs(count, ulpMs)),
      );
    }
    case 'slidingWindowLog':
      return worstSpan(admitted, spec.windowMs - skewMs, () => limit);
    case 'fixedWindow':
    case 'weighted':
      return worstSlots(admitted, spec.windowMs, 1, limit, spread);
    case 'subWindows':
      return worstSlots(admitted, spec.windowMs / spec.subWindows, spec.subWindows, limit, spread);
  }
}

const SLACK = 1e-6;
/**
 * How far apart two real times may be in floating point and still be the same instant: real times
 * are sums of offsets, so a span of exactly a window can come out as 2499.999999999999 ms (seed
 * 239130173), which a window of 2500 ms does not hold twice.
 */
const SAME_INSTANT_MS = 1e-6;

/** ulpOf returns the gap between float64 numbers near `x` (x above 0): 2^-12 ms at epoch times. */
function ulpOf(x: number): number {
  return 2 ** (Math.floor(Math.log2(x)) - 52);
}

/** magnitudeOf returns a bound on the clock readings and real times of a run, in ms (at least 1). */
function magnitudeOf(admitted: readonly Admitted[], spread: Spread): number {
  const offsetMs = Math.max(Math.abs(spread.minOffsetMs), Math.abs(spread.maxOffsetMs));
  const timesMs = admitted.map((a) => Math.max(Math.abs(a.realMs), Math.abs(a.clockMs)));
  return Math.max(1, ...timesMs) + offsetMs;
}

/**
 * roundingMs returns how far float64 rounding may move the time `count` admissions take in a
 * bucket or GCRA, as the real-time bound sees it, for times whose ulp is `ulpMs`. Each admission
 * rounds at most four sums by half an ulp each: its clock reading (real time plus offset), the
 * state's advance (the TAT plus interval x cost, or the bucket's level), and for a reservation its
 * due time on the clock and in real time; the check (now plus tolerance against TAT minus burst)
 * rounds twice more. The exact bound holds; these roundings add up along a busy run: at epoch
 * times (ulp 2^-12 ms) 57 admissions of GCRA came out 2.3 µs early (FLOODGATE_TIME_SEED=2876897688,
 * which the same run with times near 0 keeps within the bound). Near time 0 it is nothing.
 */
function roundingMs(count: number, ulpMs: number): number {
  return (4 * count + 2) * (ulpMs / 2);
}

/**
 * Over every span [a_i, a_j] shorter than `shorterThanMs`, the most admitted beyond
 * `allowed(span, count)`, `count` being how many admissions the span holds.
 */
function worstSpan(
  admitted: readonly Admitted[],
  shorterThanMs: number,
  allowed: (spanMs: number, count: number) => number,
): { excess: number; where: string } {
  let worst = { excess: -Infinity, where: 'nothing admitted' };
  for (let i = 0; i < admitted.length; i++) {
    let sum = 0;
    for (let j = i; j < admitted.length; j++) {
      const spanMs = admitted[j]!.realMs - admitted[i]!.realMs;
      if (!(spanMs < shorterThanMs - SAME_INSTANT_MS)) break;
      sum += admitted[j]!.cost;
      const excess = sum - allowed(spanMs, j - i + 1) - SLACK;
      if (excess > worst.excess)
        worst = { excess, where: `${sum} admitted in real [${admitted[i]!.realMs}, ${admitted[j]!.realMs}]` };
    }
  }
  return worst;
}

/** Per aligned group of `span` slots of `slotMs`, shrunk by the offsets, the most admitted beyond `limit`. */
function worstSlots(
  admitted: readonly Admitted[],
  slotMs: number,
  span: number,
  limit: number,
  spread: Spread,
): { excess: number; where: string } {
  let worst = { excess: -Infinity, where: 'nothing admitted' };
  if (admitted.length === 0) return worst;
  const first = Math.floor((admitted[0]!.realMs + spread.minOffsetMs) / slotMs) - span;
  const last = Math.floor((admitted[admitted.length - 1]!.realMs + spread.maxOffsetMs) / slotMs) + 1;
  for (let k = first; k <= last; k++) {
    const fromMs = k * slotMs - spread.minOffsetMs;
    const toMs = (k + span) * slotMs - spread.maxOffsetMs;
    if (!(toMs > fromMs)) continue;
    const sum = admitted.filter((a) => a.realMs >= fromMs && a.realMs < toMs).reduce((s, a) => s + a.cost, 0);
    const excess = sum - limit - SLACK;
    if (excess > worst.excess) worst = { excess, where: `${sum} admitted in real [${fromMs}, ${toMs})` };
  }
  return worst;
}

/** maxInSpan returns the most cost admitted in any real span [t, t + spanMs). */
export function maxInSpan(admitted: readonly Admitted[], spanMs: number): number {
  let best = 0;
  let sum = 0;
  let i = 0;
  for (let j = 0; j < admitted.length; j++) {
    sum += admitted[j]!.cost;
    while (admitted[j]!.realMs - admitted[i]!.realMs >= spanMs) sum -= admitted[i++]!.cost;
    best = Math.max(best, sum);
  }
  return best;
}
