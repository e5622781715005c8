/** Helpers for the waiting tests: stepping a ManualClock, recording outcomes, an asynchronous store. */

import { setImmediate as nextTurn } from 'node:timers/promises';
import {
  FloodgateError,
  MemoryStore,
  type Algorithm,
  type Decision,
  type ManualClock,
  type PolicyStore,
  type Store,
  type SyncPolicyStore,
} from '../../src/index.js';

/** flush lets every pending promise reaction run (a full turn of the event loop). */
export async function flush(): Promise<void> {
  await nextTurn();
}

/**
 * runUntil moves `clock` to `untilMs` one timer at a time, letting promise reactions run after
 * each, so a reaction reads the time its timer fired at.
 */
export async function runUntil(clock: ManualClock, untilMs: number): Promise<void> {
  await flush();
  for (let next = clock.nextTimerAtMs(); next !== undefined && next <= untilMs; next = clock.nextTimerAtMs()) {
    clock.set(next);
    await flush();
  }
  if (clock.now() < untilMs) clock.set(untilMs);
  await flush();
}

/** runAll fires every timer, in order, until none is left (at most `limit` of them). */
export async function runAll(clock: ManualClock, limit = 1_000_000): Promise<void> {
  await flush();
  for (let n = 0, next = clock.nextTimerAtMs(); next !== undefined && n < limit; n++, next = clock.nextTimerAtMs()) {
    clock.set(next);
    await flush();
  }
}

/** Outcome is how a waiter's promise ended, and when on the clock. */
export type Outcome =
  | { readonly kind: 'pending' }
  | { readonly kind: 'admitted'; readonly atMs: number }
  | { readonly kind: 'failed'; readonly code: string; readonly atMs: number };

/** Tracked is a promise's outcome, filled in when it settles. */
export interface Tracked<T> {
  outcome: Outcome;
  value: T | undefined;
  error: unknown;
}

/** track records when and how `promise` settles, reading `clock` at that moment. */
export function track<T>(clock: ManualClock, promise: Promise<T>): Tracked<T> {
  const tracked: Tracked<T> = { outcome: { kind: 'pending' }, value: undefined, error: undefined };
  promise.then(
    (value) => {
      tracked.value = value;
      tracked.outcome = { kind: 'admitted', atMs: clock.now() };
    },
    (error: unknown) => {
      tracked.error = error;
      const code = error instanceof FloodgateError ? error.code : `not a FloodgateError: ${String(error)}`;
      tracked.outcome = { kind: 'failed', code, atMs: clock.now() };
    },
  );
  return tracked;
}

/** A PolicyStore that answers the memory store's answers through promises, and counts its calls. */
class AsyncTable implements PolicyStore {
  readonly synchronous = false;
  calls = 0;
  reserve?: (key: string, cost: number, nowMs: number, maxWaitMs: number) => Promise<number>;

  constructor(private readonly inner: SyncPolicyStore) {
    if (inner.reserve !== undefined) {
      this.reserve = async (key, cost, nowMs, maxWaitMs) => {
        this.calls++;
        return inner.reserve!(key, cost, nowMs, maxWaitMs);
      };
    }
  }

  async consume(key: string, cost: number, nowMs: number): Promise<Decision> {
    this.calls++;
    return this.inner.consume(key, cost, nowMs);
  }

  async peek(key: string, cost: number, nowMs: number): Promise<Decision> {
    return this.inner.peek(key, cost, nowMs);
  }

  async refund(key: string, cost: number, nowMs: number): Promise<void> {
    this.calls++;
    this.inner.refund(key, cost, nowMs);
  }

  async reset(key: string): Promise<void> {
    this.inner.reset(key);
  }
}

/** asyncStore returns a Store over a MemoryStore whose every answer is a promise; `tables` lists what it bound. */
export function asyncStore(): Store & { tables: AsyncTable[]; memory: MemoryStore } {
  const memory = new MemoryStore();
  const tables: AsyncTable[] = [];
  return {
    memory,
    tables,
    bind(algorithm: Algorithm): PolicyStore {
      const table = new AsyncTable(memory.bind(algorithm));
      tables.push(table);
      return table;
    },
  };
}

/** mulberry32 is a small seeded random generator, so a failing case can be replayed. */
export function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
