/**
 * The memory store's key table at its bound, against a gateway process: with `maxKeys: 8`, a
 * flood of 60 fresh API keys (each spending its one request a minute, so none is at rest) puts
 * the new ones past the bound on the overflow sketch. `/metrics` counts them by result
 * (`floodgate_store_overflow_total`) and the log says the table is full, with the fix, where
 * before its refusals were ordinary `limited` and nothing said so.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startGateway, type GatewayProcess } from './support/gateway-process.js';
import { call, metricValue } from './support/http.js';
import { startUpstream, type TestUpstream } from './support/upstream.js';

describe('a full key table says so', () => {
  let upstream: TestUpstream;
  let gw: GatewayProcess;

  before(async () => {
    upstream = await startUpstream();
    gw = await startGateway(`
store: { type: memory, maxKeys: 8 }
routes:
  - name: api
    upstream: ${upstream.origin}
    rules:
      - name: per-key
        policy: { algorithm: fixedWindow, limit: 1, windowMs: 60000 }
        key: { type: header, name: x-api-key }
`);
    await gw.waitForLog('ready');
  });
  after(async () => {
    await gw?.stop();
    await upstream?.close();
  });

  it('counts the requests past the bound by result, and logs the table full with the fix', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 60; i++)
      statuses.push((await call(gw.url('/x'), { headers: { 'x-api-key': `flood-${i}` } })).status);
    const metrics = (await call(gw.adminUrl('/metrics'))).body;
    const admitted = metricValue(metrics, 'floodgate_store_overflow_total', { result: 'admitted' });
    const refused = metricValue(metrics, 'floodgate_store_overflow_total', { result: 'refused' });
    assert.equal(admitted + refused, 52, 'every request of a key past the 8 held');
    assert.equal(
      refused,
      statuses.filter((s) => s === 429).length,
      'the refused are the 429s: none were over their own limit',
    );
    const full = await gw.waitForLog(
      'store key table full: new keys are decided by the overflow sketch, which can only over-count (its refusals count as limited)',
    );
    assert.equal(full.maxKeys, 8);
    assert.match(String(full.fix), /raise store\.maxKeys/);
  });
});
