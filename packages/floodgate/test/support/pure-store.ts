import { decide, type Algorithm, type Decision, type SyncPolicyStore } from '../../src/index.js';

/**
 * PureStore is a {@link SyncPolicyStore} over the pure core and nothing else: one `Float64Array`
 * per key in a `Map`, `decide` for consume, and the algorithm's own `init`/`peek`/`refund` on
 * copies for the rest. It never forgets a key by itself and never shares cells between keys, so it
 * is the reference face that other stores are compared with.
 */
export class PureStore implements SyncPolicyStore {
  readonly synchronous = true as const;
  private readonly states = new Map<string, Float64Array>();

  constructor(readonly algorithm: Algorithm) {}

  /** consume applies `decide` and keeps the state it returns (rejected or not). */
  consume(key: string, cost: number, nowMs: number): Decision {
    const { state, decision } = decide(this.algorithm, this.states.get(key), nowMs, cost);
    this.states.set(key, state);
    return decision;
  }

  /** peek answers on a copy of the state (or of a fresh one), which is then dropped. */
  peek(key: string, cost: number, nowMs: number): Decision {
    this.algorithm.checkCost(cost);
    return this.algorithm.peek(this.copyOf(key, nowMs), 0, nowMs, cost);
  }

  /**
   * refund changes a copy and keeps it; a key never seen is already full, so it stays unseen. The
   * cost is checked as a request's would be, as the memory store does.
   */
  refund(key: string, cost: number, nowMs: number): void {
    this.algorithm.checkCost(cost);
    if (!this.states.has(key)) return;
    const next = this.copyOf(key, nowMs);
    this.algorithm.refund(next, 0, nowMs, cost);
    this.states.set(key, next);
  }

  /** reset forgets the key. */
  reset(key: string): void {
    this.states.delete(key);
  }

  /** restore puts back a state saved with {@link stateOf}, undoing a step. */
  restore(key: string, state: Float64Array): void {
    this.states.set(key, state.slice());
  }

  /** stateOf returns a copy of the key's cells, or undefined for a key never seen (or reset). */
  stateOf(key: string): Float64Array | undefined {
    return this.states.get(key)?.slice();
  }

  private copyOf(key: string, nowMs: number): Float64Array {
    const state = this.states.get(key);
    if (state !== undefined) return state.slice();
    const fresh = new Float64Array(this.algorithm.width);
    this.algorithm.init(fresh, 0, nowMs);
    return fresh;
  }
}

/** pureStore returns a {@link PureStore} for `algorithm`, in the shape `runConformance` takes. */
export function pureStore(algorithm: Algorithm): PureStore {
  return new PureStore(algorithm);
}
