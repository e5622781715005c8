/**
 * The documented default of `priority.reserveRatio` is the library's: with none given, tier 1 of
 * a limit of 100 may hold 85 (0.15 a step), and docs/gateway-config.md and docs/overload.md say 0.15.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { ConcurrencyLimiter } from 'floodgate';

const doc = (name: string): string => readFileSync(new URL(`../../../docs/${name}`, import.meta.url), 'utf8');

test("reserveRatio's documented default is the code's", () => {
  const limiter = new ConcurrencyLimiter({ limit: 100, tiers: 2 });
  let admitted = 0;
  for (let i = 0; i < 100; i++) if (limiter.tryAcquire(1).allowed) admitted++;
  assert.equal(admitted, 85, 'the library holds back 0.15 of the limit from tier 1');
  const rows = doc('gateway-config.md')
    .split('\n')
    .filter((l) => l.includes('priority.reserveRatio'));
  assert.equal(rows.length, 2);
  for (const row of rows) assert.match(row, /\(default 0\.15\)/);
  assert.match(doc('overload.md'), /default 0\.15 a\s+step/);
});
