/** Shared shapes of the benchmark: what a subject offers, and what a case child prints. */

/** Regime: `admit` never reaches the limit; `reject` has it exhausted, so every call is refused. */
export type Regime = 'admit' | 'reject';

/** Path is how the caller gets the answer: returned at once, or behind a Promise. */
export type Path = 'sync' | 'promise';

/**
 * HotKeyRun makes `n` decisions on one key, in the plain loop a user would write, and returns how
 * many were admitted (so the work cannot be optimised away, and the regime can be checked).
 */
export type HotKeyRun = (n: number) => number | Promise<number>;

/** ManyKeysRun is a subject holding many keys: fill them once, then update them in any order. */
export interface ManyKeysRun {
  /** fill makes one decision on each of `n` fresh keys, built on the fly and not kept by the bench. */
  fill(n: number): number | Promise<number>;
  /** update makes one decision on each key of `keys`, returning how many were admitted. */
  update(keys: readonly string[]): number | Promise<number>;
  /** size is how many keys the store holds, when the library lets us see it. */
  size(): number | undefined;
}

/** Subject is one library (or the hand-written baseline) as the cases see it. */
export interface Subject {
  /** library is the name printed in the table. */
  readonly library: string;
  /** hotKey builds the one-key loop for a path and regime; a missing path is not offered. */
  readonly hotKey: Partial<Record<Path, (regime: Regime) => HotKeyRun>>;
  /** manyKeys builds a store sized for `n` keys, per path, when the case applies to this library. */
  readonly manyKeys: Partial<Record<Path, (n: number) => ManyKeysRun>>;
  /** note says in a few words what exactly is measured. */
  readonly note: string;
}

/** Rate is a throughput figure: the median of timed rounds, with the spread around it. */
export interface Rate {
  /** Median operations per second over the timed rounds. */
  readonly median: number;
  readonly min: number;
  readonly max: number;
  /** Operations per round and the rate of each round, in order. */
  readonly opsPerRound: number;
  readonly samples: readonly number[];
  /** Fraction of the timed operations that were admitted (1 for `admit`, 0 for `reject`). */
  readonly admittedFraction: number;
}

/** Memory is what the store retains for its keys, after a full GC, against a baseline. */
export interface Memory {
  readonly keys: number;
  /** (Δ heapUsed + Δ external) / keys: everything JS and native that the keys keep alive. */
  readonly bytesPerKey: number;
  /** Δ heapUsed / keys: the JS heap alone. */
  readonly heapBytesPerKey: number;
  /** Δ external / keys: off-heap memory (typed-array backing stores and other native memory). */
  readonly externalBytesPerKey: number;
  /** Δ arrayBuffers / keys: the typed-array part of `external`. */
  readonly arrayBufferBytesPerKey: number;
}

/** HotKeyResult is the JSON line printed by `cases/hot-key.ts`. */
export interface HotKeyResult {
  readonly case: 'hot-key';
  readonly subject: string;
  readonly library: string;
  readonly path: Path;
  readonly regime: Regime;
  readonly note: string;
  readonly rate: Rate;
}

/** ManyKeysResult is the JSON line printed by `cases/many-keys.ts`. */
export interface ManyKeysResult {
  readonly case: 'many-keys';
  readonly subject: string;
  readonly library: string;
  readonly path: Path;
  readonly note: string;
  readonly keys: number;
  /** The first pass, which creates every key: one shot, key building included. */
  readonly fill: { readonly opsPerSec: number; readonly admitted: number };
  readonly memory: Memory;
  /** Later passes over the same keys in a random order. */
  readonly update: Rate;
  /** Keys the store reports holding after the fill and at the end (null: not observable). */
  readonly sizeAfterFill: number | null;
  readonly sizeAtEnd: number | null;
}

export type CaseResult = HotKeyResult | ManyKeysResult;
