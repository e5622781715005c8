import type { Decision, FloodgateErrorCode } from '../../../src/index.js';
import type { Step } from '../suite.js';

/** ok is an admitted decision's expected fields. */
export function ok(remaining: number, resetMs: number): Partial<Decision> {
  return { allowed: true, remaining, retryAfterMs: 0, resetMs, reason: 'ok' };
}

/** no is a refused decision's expected fields. */
export function no(remaining: number, retryAfterMs: number, resetMs: number): Partial<Decision> {
  return { allowed: false, remaining, retryAfterMs, resetMs, reason: 'limit' };
}

/** consume is a consume step; `expect` may be partial where the spec leaves a field open. */
export function consume(atMs: number, key: string, cost: number, expect: Partial<Decision>): Step {
  return { atMs, op: 'consume', key, cost, expect };
}

/** peek is a peek step. */
export function peek(atMs: number, key: string, cost: number, expect: Partial<Decision>): Step {
  return { atMs, op: 'peek', key, cost, expect };
}

/** refund is a refund step. */
export function refund(atMs: number, key: string, cost: number): Step {
  return { atMs, op: 'refund', key, cost };
}

/** reset is a reset step. */
export function reset(atMs: number, key: string): Step {
  return { atMs, op: 'reset', key };
}

/** fails is a consume or peek that must throw a FloodgateError with `code`. */
export function fails(atMs: number, op: 'consume' | 'peek', key: string, cost: number, code: FloodgateErrorCode): Step {
  return { atMs, op, key, cost, throws: code };
}
