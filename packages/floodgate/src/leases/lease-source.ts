import type { Algorithm } from '../core/algorithm.js';
import type { Decision } from '../core/decision.js';
import type { PolicyStore } from '../stores/store.js';
import type { Clock } from '../core/clock.js';
import { FloodgateError } from '../core/errors.js';
import type { Timers } from '../core/timers.js';
import {
  askLease,
  returnLease,
  type LeaseAnswer,
  type LeaseAsk,
  type LeaseHolder,
  type LeaseReturn,
  type LeaseTerms,
} from './lease-ledger.js';

/**
 * LeaseSource is where a node's leases on one policy come from: the shared state's side of the
 * ledger. `ask` and `giveBack` reject (with a `FloodgateError`) when the shared state cannot be
 * reached; a node then applies its store's failure policy.
 */
export interface LeaseSource {
  /** ask applies `ask` to `key` and resolves to the answer. */
  ask(key: string, ask: LeaseAsk): Promise<LeaseAnswer>;
  /** giveBack returns units to `key` and resolves to how many the policy took back. */
  giveBack(key: string, back: LeaseReturn): Promise<number>;
}

/** KeyState is one key's shared state in a {@link MemoryLeaseSource}: the policy's cells and the ledger. */
interface KeyState {
  readonly cells: Float64Array;
  readonly holders: Map<string, LeaseHolder>;
}

/**
 * MemoryLeaseSource keeps the shared side of leases in this process, on `clock`, as the Redis
 * lease script keeps it in Redis: the same ledger rules, for tests and simulations of a fleet in
 * one process. `delayMs` puts a one-way delay (on `timers`) before the ledger runs and again
 * before the answer arrives, as a network would; 0 answers in a microtask.
 *
 * @example
 * const clock = new ManualClock();
 * const source = new MemoryLeaseSource({ policy, terms, clock, delayMs: 1 });
 */
export class MemoryLeaseSource implements LeaseSource {
  private readonly keys = new Map<string, KeyState>();
  private readonly policy: Algorithm;
  private readonly terms: LeaseTerms;
  private readonly clock: Clock;
  private readonly timers: Timers | undefined;
  private readonly delayMs: number;
  /** calls counts every ask and giveBack, as Redis would count scripts. */
  calls = 0;
  /** down, while true, rejects every call (a store that is away). */
  down = false;

  constructor(options: { policy: Algorithm; terms: LeaseTerms; clock: Clock; timers?: Timers; delayMs?: number }) {
    this.policy = options.policy;
    this.terms = options.terms;
    this.clock = options.clock;
    this.timers = options.timers;
    this.delayMs = options.delayMs ?? 0;
  }

  ask(key: string, ask: LeaseAsk): Promise<LeaseAnswer> {
    return this.run(() => {
      const state = this.stateOf(key);
      return askLease(this.policy, state.cells, 0, state.holders, ask, this.clock.now(), this.terms);
    });
  }

  giveBack(key: string, back: LeaseReturn): Promise<number> {
    return this.run(() => {
      const state = this.stateOf(key);
      return returnLease(this.policy, state.cells, 0, state.holders, back, this.clock.now());
    });
  }

  /**
   * direct returns a per-request table on the same shared state (consume, peek, refund and reset
   * of the policy itself, with the same delays), as a Redis store's own table is beside its leases;
   * it fails like the source while `down`.
   */
  direct(): PolicyStore {
    const decide = (op: 'consume' | 'peek', key: string, cost: number): Promise<Decision> =>
      this.run(() => {
        const { cells } = this.stateOf(key);
        return this.policy[op](cells, 0, this.clock.now(), cost);
      });
    return {
      synchronous: false,
      consume: (key, cost) => decide('consume', key, cost),
      peek: (key, cost) => decide('peek', key, cost),
      refund: (key, cost) => this.run(() => this.policy.refund(this.stateOf(key).cells, 0, this.clock.now(), cost)),
      reset: (key) => this.run(() => void this.keys.delete(key)),
    };
  }

  /**
   * stateOf returns `key`'s shared state now (a state at rest reads as fresh, as in Redis).
   * @internal For tests to inspect: left out of the API reference.
   */
  stateOf(key: string): KeyState {
    const nowMs = this.clock.now();
    let state = this.keys.get(key);
    if (state === undefined) {
      state = { cells: new Float64Array(this.policy.width), holders: new Map() };
      this.policy.init(state.cells, 0, nowMs);
      this.keys.set(key, state);
    } else if (this.policy.restAtMs(state.cells, 0) <= nowMs) {
      this.policy.init(state.cells, 0, nowMs);
    }
    return state;
  }

  private run<T>(step: () => T): Promise<T> {
    this.calls++;
    if (this.delayMs <= 0 || this.timers === undefined) {
      if (this.down) return Promise.reject(awayError());
      return Promise.resolve().then(step);
    }
    const timers = this.timers;
    return new Promise<T>((resolve, reject) => {
      timers.setTimer(() => {
        if (this.down) return reject(awayError());
        const answer = step();
        timers.setTimer(() => resolve(answer), this.delayMs);
      }, this.delayMs);
    });
  }
}

function awayError(): FloodgateError {
  return new FloodgateError('STORE_ERROR', 'MemoryLeaseSource is down (its `down` flag is set)', 'store');
}
