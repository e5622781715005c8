/**
 * Fuzzing with fast-check: each target is called with hostile input and held to one property,
 * that it returns (or, when async, settles) within {@link SLOWEST_CALL_MS} and throws nothing but
 * the project's typed errors. A target's input count is its usual count (scaled by FLOODGATE_SWEEP,
 * see sweep.ts), or FLOODGATE_FUZZ_RUNS inputs when that is set, for a long campaign
 * (docs/development.md, "Fuzzing"), each target stopping early after FLOODGATE_FUZZ_SECONDS when
 * that is set. Each target prints what it tried:
 * `fuzz <name>: <n> inputs, 0 crashes, slowest <ms> ms`.
 */
import fc from 'fast-check';

/** SLOWEST_CALL_MS is the longest one call may take: a slower one is a hang, and fails the target. */
export const SLOWEST_CALL_MS = 1000;

/** fuzzSecondsOf returns FLOODGATE_FUZZ_SECONDS, the most seconds one target may run, or undefined when unset. */
export function fuzzSecondsOf(env: NodeJS.ProcessEnv = process.env): number | undefined {
  const seconds = Number(env.FLOODGATE_FUZZ_SECONDS);
  return Number.isFinite(seconds) && seconds > 0 ? seconds : undefined;
}

/** fuzzRunsOf returns FLOODGATE_FUZZ_RUNS as a whole number of at least 1, or undefined when unset. */
export function fuzzRunsOf(env: NodeJS.ProcessEnv = process.env): number | undefined {
  const count = Math.floor(Number(env.FLOODGATE_FUZZ_RUNS));
  return Number.isFinite(count) && count >= 1 ? count : undefined;
}

/** FuzzOptions says how many inputs a target gets and which errors are its typed answers. */
export interface FuzzOptions {
  /** The usual number of inputs (already scaled by FLOODGATE_SWEEP); FLOODGATE_FUZZ_RUNS overrides it. */
  readonly runs: number;
  /** typed returns whether a thrown error is one of the target's typed answers; by default none is. */
  readonly typed?: (error: unknown) => boolean;
  /** A fixed seed, to replay a failure that fast-check reported. */
  readonly seed?: number;
}

/** FuzzReport is what one target's campaign tried. */
export interface FuzzReport {
  readonly name: string;
  readonly inputs: number;
  readonly slowestMs: number;
}

const untyped = (): boolean => false;

function describeInput(input: unknown): string {
  let text: string;
  try {
    text = JSON.stringify(input) ?? String(input);
  } catch {
    text = String(input);
  }
  return text.length > 300 ? `${text.slice(0, 300)}... (${text.length} characters)` : text;
}

class Tally {
  inputs = 0;
  slowestMs = 0;

  constructor(
    readonly name: string,
    private readonly typed: (error: unknown) => boolean,
  ) {}

  /** settle records a call that took `ms` and ended with `error` (undefined when it returned). */
  settle(input: unknown, ms: number, error: unknown, threw: boolean): void {
    this.inputs++;
    if (ms > this.slowestMs) this.slowestMs = ms;
    if (threw && !this.typed(error)) throw error;
    if (ms > SLOWEST_CALL_MS)
      throw new Error(
        `${this.name}: one call took ${ms.toFixed(0)} ms (over ${SLOWEST_CALL_MS}) on ${describeInput(input)}`,
      );
  }

  report(asked: number): FuzzReport {
    const report = { name: this.name, inputs: this.inputs, slowestMs: this.slowestMs };
    const cut = this.inputs < asked ? ` (of ${asked} asked: stopped at FLOODGATE_FUZZ_SECONDS)` : '';
    console.log(
      `fuzz ${this.name}: ${report.inputs} inputs${cut}, 0 crashes, slowest ${report.slowestMs.toFixed(1)} ms`,
    );
    return report;
  }
}

function parameters(options: FuzzOptions): fc.Parameters<unknown> {
  const numRuns = fuzzRunsOf() ?? options.runs;
  const seconds = fuzzSecondsOf();
  return {
    numRuns,
    ...(options.seed === undefined ? {} : { seed: options.seed }),
    // A long campaign stops at its time limit without failing, and reports the inputs it tried.
    ...(seconds === undefined ? {} : { interruptAfterTimeLimit: seconds * 1000, markInterruptAsFailure: false }),
    endOnFailure: numRuns > 100_000,
  };
}

/**
 * fuzz calls `check` with `options.runs` inputs from `arbitrary` (FLOODGATE_FUZZ_RUNS when set) and
 * returns what it tried; it throws fast-check's report of the first input that made `check` throw
 * an error `options.typed` does not accept, or take over {@link SLOWEST_CALL_MS}.
 */
export function fuzz<T>(
  name: string,
  arbitrary: fc.Arbitrary<T>,
  check: (input: T) => unknown,
  options: FuzzOptions,
): FuzzReport {
  const tally = new Tally(name, options.typed ?? untyped);
  const params = parameters(options);
  fc.assert(
    fc.property(arbitrary, (input) => {
      const startMs = performance.now();
      let error: unknown;
      let threw = false;
      try {
        check(input);
      } catch (e) {
        error = e;
        threw = true;
      }
      tally.settle(input, performance.now() - startMs, error, threw);
    }),
    params as fc.Parameters<[T]>,
  );
  return tally.report(params.numRuns!);
}

/**
 * fuzzAsync is {@link fuzz} for a `check` that returns a promise: the promise must settle within
 * {@link SLOWEST_CALL_MS}, else the target fails as hung.
 */
export async function fuzzAsync<T>(
  name: string,
  arbitrary: fc.Arbitrary<T>,
  check: (input: T) => Promise<unknown>,
  options: FuzzOptions,
): Promise<FuzzReport> {
  const tally = new Tally(name, options.typed ?? untyped);
  const params = parameters(options);
  await fc.assert(
    fc.asyncProperty(arbitrary, async (input) => {
      const startMs = performance.now();
      let timer: NodeJS.Timeout | undefined;
      const hung = new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`${name}: no answer within ${SLOWEST_CALL_MS} ms`)),
          SLOWEST_CALL_MS + 50,
        );
      });
      let error: unknown;
      let threw = false;
      try {
        await Promise.race([check(input), hung]);
      } catch (e) {
        error = e;
        threw = true;
      } finally {
        clearTimeout(timer);
      }
      tally.settle(input, performance.now() - startMs, error, threw);
    }),
    params as fc.Parameters<[T]>,
  );
  return tally.report(params.numRuns!);
}
