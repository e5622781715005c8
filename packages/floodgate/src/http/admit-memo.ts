/**
 * A memo of what an admitted decision makes, by the two numbers of it that reach the response:
 * the same few values come back request after request, so each is made once and then reused.
 */
import type { Decision } from '../core/decision.js';
import { tSecondsOf } from './headers.js';

/** Slots in the memo (a power of two): the pairs of `r` and `t` remembered at once. */
const SLOTS = 256;
/** Misses in a row after which the memo stops remembering for a while: `r` is new on every request. */
const MISSES_TO_PAUSE = 64;
/** Requests answered without the memo once it has paused, before it tries again. */
const PAUSE_REQUESTS = 4096;

/**
 * AdmitMemo remembers, for one dimension with a fixed policy, the value `make` returns for an
 * admitted decision (its verdict), by the decision's remaining quota (`r`) and its reset in whole
 * seconds (`t`), which are all `make` may read of it. Every policy has at most `limit + 1`
 * remaining counts and a window's worth of seconds, so under steady traffic nearly every admitted
 * request finds its value here. That saves more than the writing: node validates a header value
 * with a regular expression, which costs a freshly built string about 0.2 µs more than a string
 * it has seen before.
 *
 * It is direct-mapped: each (`r`, `t`) pair has one slot, and a pair that lands on an occupied
 * slot replaces what was there. Memory is fixed at {@link SLOTS} values.
 *
 * When `remaining` counts down on every request (a limit far above the traffic), no pair comes
 * back and remembering only costs: each value kept would outlive a young-generation collection for
 * nothing. So after {@link MISSES_TO_PAUSE} misses in a row the memo makes values without
 * looking or keeping for {@link PAUSE_REQUESTS} requests, then tries again. Its answers are the
 * same either way.
 */
export class AdmitMemo<V> {
  private readonly remaining = new Float64Array(SLOTS).fill(-1);
  private readonly seconds = new Float64Array(SLOTS);
  private readonly values: (V | undefined)[] = new Array<V | undefined>(SLOTS).fill(undefined);
  /** Misses in a row while remembering; while paused, minus the requests left in the pause. */
  private misses = 0;

  /** `make` builds the value for a decision from its `remaining` and its `t` ({@link tSecondsOf}) alone. */
  constructor(private readonly make: (decision: Decision) => V) {}

  /** valueOf returns the value for an admitted `decision`: the one remembered for its `r` and `t`, or a new one. */
  valueOf(decision: Decision): V {
    if (this.misses < 0) {
      this.misses++;
      return this.make(decision);
    }
    const remaining = decision.remaining;
    const seconds = tSecondsOf(decision);
    const slot = (remaining * 31 + seconds) & (SLOTS - 1);
    const found = this.values[slot];
    if (found !== undefined && this.remaining[slot] === remaining && this.seconds[slot] === seconds) {
      this.misses = 0;
      return found;
    }
    const value = this.make(decision);
    if (++this.misses === MISSES_TO_PAUSE) this.misses = -PAUSE_REQUESTS;
    this.remaining[slot] = remaining;
    this.seconds[slot] = seconds;
    this.values[slot] = value;
    return value;
  }
}
