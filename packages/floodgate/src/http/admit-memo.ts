/**
 * A memo of admitted verdicts for one dimension with a fixed limiter: the same few header values
 * come back request after request, so each is written once and then reused.
 */
import type { Decision } from '../core/decision.js';
import { FIELD, serviceItem, tSecondsOf } from './headers.js';
import type { HeaderPair, Verdict } from './verdict.js';

/** Slots in the memo (a power of two): the pairs of `r` and `t` remembered at once. */
const SLOTS = 256;

/**
 * AdmitMemo remembers the verdict of an admitted request (its `RateLimit-Policy` and `RateLimit`
 * headers, nothing charged to refund) by the two numbers it depends on: the decision's remaining
 * quota (`r`) and its reset in whole seconds (`t`). Every value has at most `limit + 1` remaining
 * counts and a window's worth of seconds, so under steady traffic nearly every admitted request
 * finds its verdict here. That saves more than the writing: node validates a header value with a
 * regular expression, which costs a freshly built string about 0.2 µs to flatten and scan, where
 * a string it has seen before is already flat.
 *
 * It is direct-mapped: each (`r`, `t`) pair has one slot, and a pair that lands on an occupied
 * slot replaces what was there. Memory is fixed at {@link SLOTS} verdicts.
 */
export class AdmitMemo {
  private readonly remaining = new Float64Array(SLOTS).fill(-1);
  private readonly seconds = new Float64Array(SLOTS);
  private readonly verdicts: (Verdict | undefined)[] = new Array<Verdict | undefined>(SLOTS).fill(undefined);

  constructor(
    /** The dimension's `RateLimit-Policy` item. */
    private readonly policyItem: string,
    /** The start of the dimension's `RateLimit` item, `"name";r=`. */
    private readonly serviceHead: string,
  ) {}

  /** verdictOf returns the verdict for an admitted `decision` made by the policy of this memo's dimension. */
  verdictOf(decision: Decision): Verdict {
    const remaining = decision.remaining;
    const seconds = tSecondsOf(decision);
    const slot = (remaining * 31 + seconds) & (SLOTS - 1);
    const found = this.verdicts[slot];
    if (found !== undefined && this.remaining[slot] === remaining && this.seconds[slot] === seconds) return found;
    const headers: readonly HeaderPair[] = [
      [FIELD.policy, this.policyItem],
      [FIELD.service, serviceItem(this.serviceHead, decision, undefined)],
    ];
    const verdict: Verdict = { allowed: true, statusCode: 0, headers, body: undefined, charges: undefined };
    this.remaining[slot] = remaining;
    this.seconds[slot] = seconds;
    this.verdicts[slot] = verdict;
    return verdict;
  }
}
