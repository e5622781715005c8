import fc from 'fast-check';
import {
  fixedWindow,
  gcra,
  leakyBucket,
  slidingWindowCounter,
  slidingWindowLog,
  tokenBucket,
  type Algorithm,
} from '../../src/index.js';

/** PolicySpec is a policy as plain numbers, so fast-check can print a counterexample. */
export type PolicySpec =
  | { kind: 'tokenBucket' | 'leakyBucket'; capacity: number; perSecond: number }
  | { kind: 'fixedWindow' | 'slidingWindowLog' | 'weighted'; limit: number; windowMs: number }
  | { kind: 'subWindows'; limit: number; windowMs: number; subWindows: number }
  | { kind: 'gcra'; rate: number; periodMs: number; maxBurst: number };

export type PolicyKind = PolicySpec['kind'];

export const policyKinds: readonly PolicyKind[] = [
  'tokenBucket',
  'leakyBucket',
  'fixedWindow',
  'slidingWindowLog',
  'weighted',
  'subWindows',
  'gcra',
];

/** build returns the algorithm `spec` describes. */
export function build(spec: PolicySpec): Algorithm {
  switch (spec.kind) {
    case 'tokenBucket':
      return tokenBucket({ capacity: spec.capacity, refillPerSecond: spec.perSecond });
    case 'leakyBucket':
      return leakyBucket({ capacity: spec.capacity, leakPerSecond: spec.perSecond });
    case 'fixedWindow':
      return fixedWindow({ limit: spec.limit, windowMs: spec.windowMs });
    case 'slidingWindowLog':
      return slidingWindowLog({ limit: spec.limit, windowMs: spec.windowMs });
    case 'weighted':
      return slidingWindowCounter({ limit: spec.limit, windowMs: spec.windowMs });
    case 'subWindows':
      return slidingWindowCounter({ limit: spec.limit, windowMs: spec.windowMs, subWindows: spec.subWindows });
    case 'gcra':
      return gcra({ rate: spec.rate, periodMs: spec.periodMs, maxBurst: spec.maxBurst });
  }
}

/** limitOf returns the most cost a fresh key admits at once under `spec`. */
export function limitOf(spec: PolicySpec): number {
  switch (spec.kind) {
    case 'tokenBucket':
    case 'leakyBucket':
      return spec.capacity;
    case 'gcra':
      return spec.maxBurst + 1;
    default:
      return spec.limit;
  }
}

/** scaleMs returns about how long `spec` takes to come back from empty to full. */
export function scaleMs(spec: PolicySpec): number {
  switch (spec.kind) {
    case 'tokenBucket':
    case 'leakyBucket':
      return (spec.capacity * 1000) / spec.perSecond;
    case 'gcra':
      return (spec.periodMs / spec.rate) * (spec.maxBurst + 1);
    default:
      return spec.windowMs;
  }
}

const windowMs = fc.oneof(fc.integer({ min: 1, max: 50 }), fc.integer({ min: 51, max: 3000 }));
const perSecond = fc.oneof(fc.integer({ min: 1, max: 100 }), fc.constantFrom(0.5, 1 / 3, 2.5, 1000 / 7));

/** policyArb returns random policies of one kind. */
export function policyArb(kind: PolicyKind): fc.Arbitrary<PolicySpec> {
  switch (kind) {
    case 'tokenBucket':
    case 'leakyBucket':
      return fc.record({ kind: fc.constant(kind), capacity: fc.integer({ min: 1, max: 10 }), perSecond });
    case 'fixedWindow':
    case 'weighted':
      return fc.record({ kind: fc.constant(kind), limit: fc.integer({ min: 1, max: 10 }), windowMs });
    case 'slidingWindowLog':
      return fc.record({ kind: fc.constant(kind), limit: fc.integer({ min: 1, max: 8 }), windowMs });
    case 'subWindows':
      return fc
        .record({
          limit: fc.integer({ min: 1, max: 10 }),
          subWindows: fc.integer({ min: 1, max: 6 }),
          subMs: fc.integer({ min: 1, max: 600 }),
        })
        .map(({ limit, subWindows, subMs }) => ({ kind, limit, subWindows, windowMs: subMs * subWindows }));
    case 'gcra':
      return fc.record({
        kind: fc.constant(kind),
        rate: fc.integer({ min: 1, max: 20 }),
        periodMs: fc.integer({ min: 1, max: 5000 }),
        maxBurst: fc.integer({ min: 0, max: 8 }),
      });
  }
}

/**
 * costArb returns costs from 0 (or from above 0 when `positive`) up to the limit: whole numbers for
 * the sliding log, else whole numbers and tenths.
 */
export function costArb(spec: PolicySpec, positive = false): fc.Arbitrary<number> {
  const limit = limitOf(spec);
  const min = positive ? 1 : 0;
  const whole = fc.integer({ min, max: limit });
  if (spec.kind === 'slidingWindowLog') return whole;
  return fc.oneof(
    whole,
    fc.integer({ min, max: limit * 10 }).map((tenths) => tenths / 10),
  );
}

/**
 * stepArb returns a time step for `spec`: mostly forward (often 0), sometimes backwards unless
 * `backwards` is false, up to about one and a half times the policy's scale.
 */
export function stepArb(spec: PolicySpec, backwards = true): fc.Arbitrary<number> {
  const far = Math.max(2, Math.ceil(scaleMs(spec) * 1.5));
  return fc.oneof(
    { weight: 3, arbitrary: fc.constant(0) },
    { weight: 8, arbitrary: fc.integer({ min: 1, max: far }) },
    { weight: backwards ? 2 : 0, arbitrary: fc.integer({ min: -far, max: -1 }) },
  );
}

/** startArb returns a first time: small, arbitrary, or at epoch scale. */
export const startArb: fc.Arbitrary<number> = fc.oneof(
  fc.constant(0),
  fc.integer({ min: 0, max: 10_000_000 }),
  fc.constant(1_728_000_000_123),
);
