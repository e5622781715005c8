import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, it } from 'node:test';
import { ClientIpResolver, HttpGate, type HttpLimitOptions, type Verdict } from '../../src/http/index.js';
import { fixedWindow, FloodgateError, Limiter, ManualClock } from '../../src/index.js';
import { FakeView, memoryLogger, type FakeRequest } from './support.js';

const SECRET = 'deployment secret, 32 characters';

function pkOf(options: Partial<HttpLimitOptions<FakeRequest>>, remote = '127.0.0.1'): string | undefined {
  const limiter = new Limiter({ policy: fixedWindow({ limit: 5, windowMs: 60_000 }), clock: new ManualClock(0) });
  const gate = new HttpGate<FakeRequest>({ limiter, ...options });
  const verdict = gate.check(new FakeView(new ClientIpResolver({}, memoryLogger()), { remote })) as Verdict;
  const service = verdict.headers.find(([name]) => name === 'ratelimit')![1];
  return /;pk=:([^:]*):/.exec(service)?.[1];
}

describe("attack: recovering a client's key from pk (issue 14)", () => {
  it('sends no pk unless a secret is configured', () => {
    assert.equal(pkOf({}), undefined);
    assert.equal(pkOf({ partitionKeys: false }), undefined);
  });

  it('no longer matches the unsalted hash the issue recomputed from default/ip:127.0.0.1', () => {
    const unsalted = createHash('sha256')
      .update(Buffer.from('default/ip:127.0.0.1', 'utf16le'))
      .digest()
      .subarray(0, 16)
      .toString('base64');
    const pk = pkOf({ partitionKeys: { secret: SECRET } });
    assert.ok(pk !== undefined && pk.length > 0);
    assert.notEqual(pk, unsalted);
  });

  it('is stable for one secret (every process of a deployment), different under another, and per client', () => {
    const a = pkOf({ partitionKeys: { secret: SECRET } });
    assert.equal(pkOf({ partitionKeys: { secret: Buffer.from(SECRET) } }), a);
    assert.notEqual(pkOf({ partitionKeys: { secret: `${SECRET}!` } }), a);
    assert.notEqual(pkOf({ partitionKeys: { secret: SECRET } }, '127.0.0.2'), a);
  });

  it('refuses partition keys without a secret, or with a short one, naming the option', () => {
    for (const partitionKeys of [true, { secret: 'short' }, { secret: 42 }, {}]) {
      assert.throws(
        () => pkOf({ partitionKeys } as unknown as Partial<HttpLimitOptions<FakeRequest>>),
        (err: unknown) =>
          err instanceof FloodgateError && err.code === 'INVALID_OPTION' && err.option === 'partitionKeys',
      );
    }
  });
});
