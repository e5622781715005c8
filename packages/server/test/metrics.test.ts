import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConcurrencyLimiter } from 'floodgate';
import { GatewayMetrics } from '../src/ops/metrics.js';

async function valueOf(
  metrics: GatewayMetrics,
  name: string,
  labels: Record<string, string>,
): Promise<number | undefined> {
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
    assert.equal(
      await valueOf(metrics, 'floodgate_decisions_total', { route: 'api', rule: 'per-ip', outcome: 'admitted' }),
      2,
    );
    assert.equal(
      await valueOf(metrics, 'floodgate_decisions_total', { route: 'api', rule: 'per-ip', outcome: 'limited' }),
      1,
    );
    assert.equal(await valueOf(metrics, 'floodgate_responses_total', { route: 'api', status: '200' }), 1);
    assert.equal(
      await valueOf(metrics, 'floodgate_ratelimit_service_decisions_total', {
        domain: 'edge',
        descriptor: 'path',
        outcome: 'limited',
      }),
      1,
    );
    metrics.outcome('api', 'per-ip', 'admitted');
    metrics.response('api', 200, 3);
    metrics.response('api', 429, undefined);
    // A scrape with nothing new changes nothing; the next one adds what came since.
    const text = await metrics.registry.metrics();
    assert.match(text, /floodgate_decisions_total\{route="api",rule="per-ip",outcome="admitted"\} 3/);
    assert.equal(
      await valueOf(metrics, 'floodgate_decisions_total', { route: 'api', rule: 'per-ip', outcome: 'admitted' }),
      3,
    );
    assert.equal(await valueOf(metrics, 'floodgate_responses_total', { route: 'api', status: '200' }), 2);
    assert.equal(await valueOf(metrics, 'floodgate_responses_total', { route: 'api', status: '429' }), 1);
  });

  it('counts each label set on its own when requests alternate between them (the last one found is kept)', async () => {
    const metrics = new GatewayMetrics();
    const steps: [string, number][] = [
      ['api', 200],
      ['api', 200],
      ['web', 200],
      ['api', 200],
      ['api', 429],
      ['web', 200],
      ['api', 200],
    ];
    for (const [route, status] of steps) metrics.response(route, status, undefined);
    assert.equal(await valueOf(metrics, 'floodgate_responses_total', { route: 'api', status: '200' }), 4);
    assert.equal(await valueOf(metrics, 'floodgate_responses_total', { route: 'api', status: '429' }), 1);
    assert.equal(await valueOf(metrics, 'floodgate_responses_total', { route: 'web', status: '200' }), 2);
    metrics.outcome('api', 'per-ip', 'admitted');
    metrics.outcome('api', 'per-ip', 'near_limit');
    metrics.outcome('api', 'per-user', 'near_limit');
    metrics.outcome('api', 'per-ip', 'near_limit');
    const decisions = (outcome: string, rule = 'per-ip'): Promise<number | undefined> =>
      valueOf(metrics, 'floodgate_decisions_total', { route: 'api', rule, outcome });
    assert.equal(await decisions('admitted'), 1);
    assert.equal(await decisions('near_limit'), 2);
    assert.equal(await decisions('near_limit', 'per-user'), 1);
  });
});

describe('GatewayMetrics overload', () => {
  it("reads each guard's limiter and circuit at the scrape, counts sheds and transitions, and drops a guard a reload removed", async () => {
    const metrics = new GatewayMetrics();
    const limiter = new ConcurrencyLimiter({ limit: 3 });
    const permit = limiter.tryAcquire();
    let guards = [{ scope: 'route:api', limiter, breaker: { state: 'half-open' } }];
    metrics.overload.guards = () => guards;
    metrics.overload.shed('route:api', 'batch', 'limit');
    metrics.overload.shed('route:api', 'batch', 'limit');
    metrics.overload.circuitTransition('route:api', 'open');
    assert.equal(await valueOf(metrics, 'floodgate_concurrency_limit', { scope: 'route:api' }), 3);
    assert.equal(await valueOf(metrics, 'floodgate_concurrency_in_flight', { scope: 'route:api' }), 1);
    assert.equal(await valueOf(metrics, 'floodgate_concurrency_queued', { scope: 'route:api' }), 0);
    assert.equal(
      await valueOf(metrics, 'floodgate_concurrency_rtt_baseline_seconds', { scope: 'route:api' }),
      undefined,
      'a fixed limit has no latency estimate',
    );
    assert.equal(await valueOf(metrics, 'floodgate_circuit_state', { scope: 'route:api' }), 1);
    assert.equal(
      await valueOf(metrics, 'floodgate_concurrency_shed_total', {
        scope: 'route:api',
        tier: 'batch',
        reason: 'limit',
      }),
      2,
    );
    assert.equal(await valueOf(metrics, 'floodgate_circuit_transitions_total', { scope: 'route:api', to: 'open' }), 1);
    if (permit.allowed) permit.release();
    guards = [];
    assert.equal(await valueOf(metrics, 'floodgate_concurrency_limit', { scope: 'route:api' }), undefined);
    assert.equal(await valueOf(metrics, 'floodgate_circuit_state', { scope: 'route:api' }), undefined);
  });
});
