/**
 * How many random cases the randomised tests run. One knob, FLOODGATE_SWEEP (a whole number, 1
 * when unset), scales them all for a sweep (docs/development.md, "Sweeping the randomised tests"): each fast-check property runs its
 * usual number of cases times FLOODGATE_SWEEP, and each seeded test (test/time/) runs that many
 * fresh seeds.
 */

/** sweepCount returns FLOODGATE_SWEEP as a whole number of at least 1 (1 when unset or not a number). */
export function sweepCount(env: NodeJS.ProcessEnv = process.env): number {
  const count = Math.floor(Number(env.FLOODGATE_SWEEP ?? 1));
  return Number.isFinite(count) && count >= 1 ? count : 1;
}

/** runs returns the number of cases a fast-check property runs: `base` times {@link sweepCount}. */
export function runs(base: number): number {
  return base * sweepCount();
}
