import assert from 'node:assert/strict';
import type { Decision } from '../../src/index.js';

/**
 * assertWellFormed checks what holds of every decision: remaining a whole number from 0 to the
 * limit; retryAfterMs 0 when allowed, else a whole number of at least 1; resetMs a whole number of
 * at least 0, and at least 1 while remaining is short of the limit; reason matching `allowed`.
 */
export function assertWellFormed(d: Decision, limit: number, where = ''): void {
  const at = `${where} ${JSON.stringify(d)}`;
  assert.equal(d.limit, limit, `limit ${at}`);
  assert.ok(Number.isInteger(d.remaining) && d.remaining >= 0 && d.remaining <= limit, `remaining ${at}`);
  assert.ok(Number.isInteger(d.resetMs) && d.resetMs >= 0, `resetMs ${at}`);
  if (d.remaining < limit) assert.ok(d.resetMs >= 1, `a key short of full has resetMs >= 1: ${at}`);
  if (d.allowed) {
    assert.equal(d.retryAfterMs, 0, `retryAfterMs ${at}`);
    assert.equal(d.reason, 'ok', `reason ${at}`);
  } else {
    assert.ok(Number.isInteger(d.retryAfterMs) && d.retryAfterMs >= 1, `retryAfterMs ${at}`);
    assert.equal(d.reason, 'limit', `reason ${at}`);
  }
}
