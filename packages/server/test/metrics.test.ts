import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { GatewayMetrics } from '../src/ops/metrics.js';

async function valueOf(metrics: GatewayMetrics, name: string, labels: Record<string, string>): Promise<number | undefined> {
  const metric = (await metrics.registry.getMetricsAsJSON()).find((m) => m.name === name);
  const found = metric?.values.find((v) => Object.entries(labels).every(([k, l]) => String(v.labels[k]) === l));
  return found?.value;
}

describe('GatewayMetrics counts', () => {
  it('hands the per-request counts to each scrape, and keeps counting between scrapes', async () => {
    const metrics = new GatewayMetrics();
    metrics.outcome('api', 'per-ip', 'admitted');
    metrics.outcome('api', 'per-ip', 'admitted');
    metrics.outcome('api', 'per-ip', 'limited');
    metrics.response('api', 200, 3);
    metrics.serviceDecision('edge', 'path', 'limited');
    assert.equal(await valueOf(metrics, 'floodgate_decisions_total', { route: 'api', rule: 'per-ip', outcome: 'admitted' }), 2);
    assert.equal(await valueOf(metrics, 'floodgate_decisions_total', { route: 'api', rule: 'per-ip', outcome: 'limited' }), 1);
    assert.equal(await valueOf(metrics, 'floodgate_responses_total', { route: 'api', status: '200' }), 1);
    assert.equal(await valueOf(metrics, 'floodgate_ratelimit_service_decisions_total', { domain: 'edge', descriptor: 'path', outcome: 'limited' }), 1);
    metrics.outcome('api', 'per-ip', 'admitted');
    metrics.response('api', 200, 3);
    metrics.response('api', 429, undefined);
    // A scrape with nothing new changes nothing; the next one adds what came since.
    const text = await metrics.registry.metrics();
    assert.match(text, /floodgate_decisions_total\{route="api",rule="per-ip",outcome="admitted"\} 3/);
    assert.equal(await valueOf(metrics, 'floodgate_decisions_total', { route: 'api', rule: 'per-ip', outcome: 'admitted' }), 3);
    assert.equal(await valueOf(metrics, 'floodgate_responses_total', { route: 'api', status: '200' }), 2);
    assert.equal(await valueOf(metrics, 'floodgate_responses_total', { route: 'api', status: '429' }), 1);
  });
});
