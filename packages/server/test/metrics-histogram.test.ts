import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Histogram, Registry } from 'prom-client';
import { LabelledHistogram } from '../src/ops/histogram.js';

describe('LabelledHistogram', () => {
  it("exposes exactly what prom-client's Histogram exposes for the same observations", async () => {
    const buckets = [0.001, 0.005, 0.01, 0.1, 1];
    const ours = new Registry();
    const theirs = new Registry();
    const fast = new LabelledHistogram({
      name: 'x_seconds',
      help: 'Some durations.',
      labelNames: ['route', 'status'],
      buckets,
      registry: ours,
    });
    const reference = new Histogram({
      name: 'x_seconds',
      help: 'Some durations.',
      labelNames: ['route', 'status'],
      buckets,
      registers: [theirs],
    });
    const observations: Array<[string, number, number]> = [
      ['api', 200, 0.0004],
      ['api', 200, 0.001],
      ['api', 200, 0.0011],
      ['api', 502, 3],
      ['login', 429, 0.05],
      ['api', 200, 0.1],
      ['login', 429, 0],
    ];
    for (const [route, status, seconds] of observations) {
      fast.of(route, status).observe(seconds);
      reference.labels(route, String(status)).observe(seconds);
    }
    assert.equal(await ours.metrics(), await theirs.metrics());
    ours.resetMetrics();
    theirs.resetMetrics();
    fast.of('api', 200).observe(0.002);
    reference.labels('api', '200').observe(0.002);
    // prom-client forgets its children on reset; ours keep their zeroed counts, so compare the one cell.
    const line = (text: string): string[] => text.split('\n').filter((l) => l.includes('route="api",status="200"'));
    assert.deepEqual(line(await ours.metrics()), line(await theirs.metrics()));
  });
});
