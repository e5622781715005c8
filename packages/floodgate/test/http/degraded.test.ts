import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { HttpGate, type Verdict } from '../../src/http/index.js';
import { fixedWindow, Limiter, ManualClock, type Decision, type PolicyStore, type Store } from '../../src/index.js';
import { FakeView, memoryLogger, type FakeRequest } from './support.js';

/**
 * A store whose backend is away and whose failure policy decides every request, as the Redis
 * store's `onError` does: each decision carries the policy's reason.
 */
function decidedBy(reason: Decision['reason'], allowed: boolean): Store {
  const decision: Decision = {
    allowed,
    limit: 5,
    remaining: allowed ? 4 : 0,
    retryAfterMs: allowed ? 0 : 2000,
    resetMs: 2000,
    reason,
  };
  const answer = async (): Promise<Decision> => decision;
  const table: PolicyStore = {
    synchronous: false,
    consume: answer,
    peek: answer,
    refund: async () => {},
    reset: async () => {},
  };
  return { bind: () => table };
}

function gateOver(store: Store): HttpGate<FakeRequest> {
  const limiter = new Limiter({ policy: fixedWindow({ limit: 5, windowMs: 1000 }), clock: new ManualClock(), store });
  return new HttpGate<FakeRequest>({ limiter, name: 'shared', logger: memoryLogger() });
}

async function run(gate: HttpGate<FakeRequest>): Promise<Verdict> {
  return gate.check(new FakeView(gate.clientIp, {}));
}

const header = (v: Verdict, name: string): string | undefined => v.headers.find(([n]) => n === name)?.[1];

describe("decisions made by a store's failure policy are marked", () => {
  it('an admission by the local fallback carries the degraded header and its decision', async () => {
    const v = await run(gateOver(decidedBy('fallback', true)));
    assert.equal(v.allowed, true);
    assert.equal(header(v, 'floodgate-degraded'), 'fallback');
    assert.equal(header(v, 'ratelimit'), '"shared";r=4;t=2', 'the local share decided: its remaining is real');
  });

  it('an admission by fail-open is marked and claims no remaining quota (no r=0)', async () => {
    const v = await run(gateOver(decidedBy('fail-open', true)));
    assert.equal(v.allowed, true);
    assert.equal(header(v, 'floodgate-degraded'), 'fail-open');
    assert.equal(header(v, 'ratelimit'), undefined, 'nothing was decided, so no RateLimit item');
    assert.equal(header(v, 'ratelimit-policy'), '"shared";q=5;w=1', 'the policy itself is still announced');
  });

  it('with legacy headers, fail-open claims no X-RateLimit-Remaining either', async () => {
    const limiter = new Limiter({
      policy: fixedWindow({ limit: 5, windowMs: 1000 }),
      clock: new ManualClock(),
      store: decidedBy('fail-open', true),
    });
    const gate = new HttpGate<FakeRequest>({ limiter, legacyHeaders: true, logger: memoryLogger() });
    const v = await run(gate);
    assert.deepEqual(v.headers.map(([n]) => n).sort(), ['floodgate-degraded', 'ratelimit-policy']);
  });

  it('two dimensions, one failing open: only the decided one has a RateLimit item', async () => {
    const clock = new ManualClock();
    const local = new Limiter({ policy: fixedWindow({ limit: 3, windowMs: 1000 }), clock });
    const shared = new Limiter({
      policy: fixedWindow({ limit: 5, windowMs: 1000 }),
      clock,
      store: decidedBy('fail-open', true),
    });
    const gate = new HttpGate<FakeRequest>({
      dimensions: [
        { name: 'local', limiter: local },
        { name: 'shared', limiter: shared },
      ],
      logger: memoryLogger(),
    });
    const v = await run(gate);
    assert.equal(v.allowed, true);
    assert.equal(header(v, 'ratelimit'), '"local";r=2;t=1');
    assert.equal(header(v, 'ratelimit-policy'), '"local";q=3;w=1, "shared";q=5;w=1');
  });

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
    assert.equal(header(v, 'retry-after'), '2');
    assert.equal(header(v, 'ratelimit'), undefined);
    const body = JSON.parse(v.body!) as Record<string, unknown>;
    assert.equal(body.type, 'https://iana.org/assignments/http-problem-types#temporary-reduced-capacity');
  });

  it('a decision by the limit itself is not marked', async () => {
    const v = await run(gateOver(decidedBy('ok', true)));
    assert.equal(header(v, 'floodgate-degraded'), undefined);
  });

  it('with refundWhen, nothing is given back where fail-open admitted: nothing was charged there', async () => {
    const clock = new ManualClock();
    const local = new Limiter({ policy: fixedWindow({ limit: 3, windowMs: 1000 }), clock });
    const shared = new Limiter({
      policy: fixedWindow({ limit: 5, windowMs: 1000 }),
      clock,
      store: decidedBy('fail-open', true),
    });
    const both = new HttpGate<FakeRequest>({
      dimensions: [
        { name: 'local', limiter: local },
        { name: 'shared', limiter: shared },
      ],
      refundWhen: () => true,
      logger: memoryLogger(),
    });
    const v = await run(both);
    assert.deepEqual(
      v.charges?.map((c) => c.dimension),
      ['local'],
    );
    const only = new HttpGate<FakeRequest>({ limiter: shared, refundWhen: () => true, logger: memoryLogger() });
    assert.equal((await run(only)).charges, undefined);
  });
});
