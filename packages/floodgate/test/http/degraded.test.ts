import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { HttpGate, type Verdict } from '../../src/http/index.js';
import { fixedWindow, Limiter, ManualClock, type Decision, type PolicyStore, type Store } from '../../src/index.js';
import { FakeView, type FakeRequest } from './support.js';

/**
 * A store whose backend is away and whose failure policy decides every request, as the Redis
 * store's `onError` does: each decision carries the policy's reason.
 */
function decidedBy(reason: Decision['reason'], allowed: boolean): Store {
  const decision: Decision = { allowed, limit: 5, remaining: allowed ? 4 : 0, retryAfterMs: allowed ? 0 : 2000, resetMs: 2000, reason };
  const answer = async (): Promise<Decision> => decision;
  const table: PolicyStore = { synchronous: false, consume: answer, peek: answer, refund: async () => {}, reset: async () => {} };
  return { bind: () => table };
}

function gateOver(store: Store): HttpGate<FakeRequest> {
  const limiter = new Limiter({ policy: fixedWindow({ limit: 5, windowMs: 1000 }), clock: new ManualClock(), store });
  return new HttpGate<FakeRequest>({ limiter, name: 'shared' });
}

async function run(gate: HttpGate<FakeRequest>): Promise<Verdict> {
  return gate.check(new FakeView(gate.clientIp, {}));
}

const header = (v: Verdict, name: string): string | undefined => v.headers.find(([n]) => n === name)?.[1];

describe("decisions made by a store's failure policy are marked", () => {
  for (const reason of ['fail-open', 'fallback'] as const) {
    it(`an admission by ${reason} carries the degraded header naming it`, async () => {
      const v = await run(gateOver(decidedBy(reason, true)));
      assert.equal(v.allowed, true);
      assert.equal(header(v, 'floodgate-degraded'), reason);
      assert.ok(header(v, 'ratelimit') !== undefined, 'the decision is still reported');
    });
  }

  it('a refusal by the local fallback is a quota refusal (429), marked', async () => {
    const v = await run(gateOver(decidedBy('fallback', false)));
    assert.equal(v.statusCode, 429);
    assert.equal(header(v, 'floodgate-degraded'), 'fallback');
    assert.equal(header(v, 'retry-after'), '2');
  });

  it('a refusal by fail-closed is temporary reduced capacity (503), marked', async () => {
    const v = await run(gateOver(decidedBy('fail-closed', false)));
    assert.equal(v.statusCode, 503);
    assert.equal(header(v, 'floodgate-degraded'), 'fail-closed');
    const body = JSON.parse(v.body!) as Record<string, unknown>;
    assert.equal(body.type, 'https://iana.org/assignments/http-problem-types#temporary-reduced-capacity');
  });

  it('a decision by the limit itself is not marked', async () => {
    const v = await run(gateOver(decidedBy('ok', true)));
    assert.equal(header(v, 'floodgate-degraded'), undefined);
  });
});
