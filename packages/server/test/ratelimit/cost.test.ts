import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { ManualClock } from 'floodgate';
import { createRateLimitService, parseDecisionRequest, parseDescriptorConfig } from '../../src/ratelimit/index.js';
import { fixtureDomains, fixturePath, START_MS } from './support.js';

function service() {
  return createRateLimitService({ domains: fixtureDomains('cost.yaml'), clock: new ManualClock(START_MS) });
}

function ask(key: string, extra: Record<string, unknown> = {}) {
  return parseDecisionRequest({ domain: 'costs', descriptors: [{ entries: [{ key, value: 'v' }], ...extra }] });
}

describe('rate_limit.cost: what one hit charges', () => {
  it('reads cost (default 1)', () => {
    const [d] = fixtureDomains('cost.yaml');
    assert.deepEqual(
      d!.descriptors.map((x) => x.rateLimit?.cost),
      [3, 0.5, 1],
    );
  });

  it('charges cost per hit, multiplies hits_addend, and refuses without charging what no longer fits', async () => {
    const s = service();
    const first = await s.shouldRateLimit(ask('report'));
    assert.equal(first.overallCode, 'OK');
    assert.equal(first.statuses[0]!.limitRemaining, 7);
    const double = await s.shouldRateLimit(ask('report', { hits_addend: 2 }));
    assert.equal(double.statuses[0]!.limitRemaining, 1);
    const refused = await s.shouldRateLimit(ask('report'));
    assert.equal(refused.overallCode, 'OVER_LIMIT');
    assert.equal(refused.statuses[0]!.limitRemaining, 1, 'the refused hit charged nothing');
    const plain = await s.shouldRateLimit(ask('plain', { hits_addend: 2 }));
    assert.equal(plain.statuses[0]!.limitRemaining, 8);
  });

  it('asks about one hit at its cost when counting nothing', async () => {
    const s = service();
    await s.shouldRateLimit(ask('report', { hits_addend: 3 }));
    const peek = await s.shouldRateLimit(ask('report'), 'peek');
    assert.equal(peek.overallCode, 'OVER_LIMIT', 'one hit costs 3 and only 1 is left');
    const zero = await s.shouldRateLimit(ask('report', { hits_addend: 0 }));
    assert.equal(zero.overallCode, 'OVER_LIMIT');
    assert.equal(zero.statuses[0]!.limitRemaining, 1);
  });

  it('takes fractional costs', async () => {
    const s = service();
    for (let i = 0; i < 20; i++) assert.equal((await s.shouldRateLimit(ask('search'))).overallCode, 'OK', `hit ${i}`);
    assert.equal((await s.shouldRateLimit(ask('search'))).overallCode, 'OVER_LIMIT');
  });

  it('refunds hits at their cost', async () => {
    const s = service();
    await s.shouldRateLimit(ask('report', { hits_addend: 2 }));
    await s.refund(ask('report'));
    assert.equal((await s.shouldRateLimit(ask('report'), 'peek')).statuses[0]!.limitRemaining, 7);
  });

  it('refuses every bad cost in the error fixture, naming where', () => {
    const parsed = parseDescriptorConfig(readFileSync(fixturePath('cost-errors.yaml'), 'utf8'), 'cost-errors.yaml');
    assert.ok('errors' in parsed);
    const paths = parsed.errors.map((e) => e.path);
    assert.deepEqual(
      paths,
      [0, 1, 2, 3, 4].map((i) => `descriptors[${i}].rate_limit.cost`),
    );
    for (const e of parsed.errors) {
      assert.match(e.message, /must be a number above 0/);
      assert.ok(e.line > 0 && e.column > 0);
    }
  });
});
