/** Reading the batch script's one-string reply (see `BATCH_LUA`). */
import type { Decision } from '../../core/decision.js';
import { scriptDecision } from './runner.js';
import { BATCH_ANSWER_FIELDS, BATCH_ESCAPES, BATCH_SEPARATOR } from './scripts/drivers.js';

const SEPARATOR = BATCH_SEPARATOR.charCodeAt(0);
const ZERO = 48;
const ONE = 49;
const NINE = 57;
const INFINITY = 'Infinity';
/** Digits a double holds exactly in any whole number (below 2^53 takes 16, not all of them exact). */
const EXACT_DIGITS = 15;

const UNESCAPES = new Map(Object.entries(BATCH_ESCAPES).map(([from, to]) => [to, from]));
const ESCAPED = new RegExp([...UNESCAPES.keys()].join('|'), 'g');

/**
 * BatchReply reads the batch script's reply, one decision after another: 4 fields per decision,
 * each ended by `BATCH_SEPARATOR`. It reads numbers in place, making no string per field: what a
 * client would otherwise do for an array of 4 replies per decision.
 */
export class BatchReply {
  /** Where the next decision's fields start. */
  private at = 0;
  /** Where the decision read last starts. */
  private last = 0;

  private constructor(private readonly text: string) {}

  /**
   * of returns a reader over `reply` when it is a string (or bytes) of exactly 4 fields per
   * decision for `decisions` decisions, or undefined when it is anything else.
   */
  static of(reply: unknown, decisions: number): BatchReply | undefined {
    const text = typeof reply === 'string' ? reply : reply instanceof Uint8Array ? Buffer.from(reply).toString() : '';
    if (text.charCodeAt(text.length - 1) !== SEPARATOR) return undefined;
    let fields = 0;
    for (let at = text.indexOf(BATCH_SEPARATOR); at >= 0; at = text.indexOf(BATCH_SEPARATOR, at + 1)) fields++;
    return fields === BATCH_ANSWER_FIELDS * decisions ? new BatchReply(text) : undefined;
  }

  /**
   * next reads the next decision for a policy of `limit`: `[allowed 1|0, remaining, retryAfterMs,
   * resetMs]` as whole numbers (retryAfterMs and resetMs may be `Infinity`). It returns undefined
   * when the fields are anything else (an error, or not what the script sends): {@link fields}
   * then gives them. Either way the reader moves on to the next decision.
   */
  next(limit: number): Decision | undefined {
    const start = this.at;
    this.last = start;
    const flag = this.text.charCodeAt(start);
    let decision: Decision | undefined;
    if ((flag === ONE || flag === ZERO) && this.text.charCodeAt(start + 1) === SEPARATOR) {
      this.at = start + 2;
      const remaining = this.whole(false);
      const retryAfterMs = remaining === undefined ? undefined : this.whole(true);
      const resetMs = retryAfterMs === undefined ? undefined : this.whole(true);
      if (remaining !== undefined && retryAfterMs !== undefined && resetMs !== undefined)
        decision = scriptDecision(flag === ONE, limit, remaining, retryAfterMs, resetMs);
    }
    if (decision === undefined) this.at = this.end(start);
    return decision;
  }

  /** fields returns the 4 fields of the decision read last, with its error message (if any) unescaped. */
  fields(): string[] {
    return this.text
      .slice(this.last, this.at - 1)
      .split(BATCH_SEPARATOR)
      .map((field) => field.replace(ESCAPED, (escaped) => UNESCAPES.get(escaped)!));
  }

  /** Reads a whole, non-negative number (no sign, no leading zero) and its separator; undefined otherwise. */
  private whole(allowInfinity: boolean): number | undefined {
    const text = this.text;
    const start = this.at;
    if (allowInfinity && text.startsWith(INFINITY, start)) {
      if (text.charCodeAt(start + INFINITY.length) !== SEPARATOR) return undefined;
      this.at = start + INFINITY.length + 1;
      return Infinity;
    }
    let value = 0;
    let at = start;
    for (let code = text.charCodeAt(at); code !== SEPARATOR; code = text.charCodeAt(++at)) {
      if (!(code >= ZERO && code <= NINE)) return undefined;
      value = value * 10 + (code - ZERO);
    }
    const digits = at - start;
    if (digits === 0 || (digits > 1 && text.charCodeAt(start) === ZERO)) return undefined;
    this.at = at + 1;
    return digits > EXACT_DIGITS ? Number(text.slice(start, at)) : value;
  }

  /** Where the decision after the one starting at `start` starts. */
  private end(start: number): number {
    let at = start;
    for (let n = 0; n < BATCH_ANSWER_FIELDS; n++) at = this.text.indexOf(BATCH_SEPARATOR, at) + 1;
    return at;
  }
}
