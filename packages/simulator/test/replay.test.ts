import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  parseTrace,
  renderCharts,
  renderHtmlReport,
  renderJsonSummary,
  renderTextSummary,
  SeededRandom,
  simulate,
} from '../src/index.js';

/** A trace of 3,000 requests on 30 keys with mixed costs, as JSON lines, drawn from a fixed seed. */
function jsonLinesTrace(): string {
  const random = new SeededRandom(77);
  const lines: string[] = [];
  let atMs = 0;
  for (let i = 0; i < 3000; i++) {
    atMs += random.exponential(1.5);
    const row: Record<string, unknown> = {
      atMs: Number(atMs.toFixed(3)),
      key: `client-${Math.floor(random.next() * 30)}`,
    };
    if (i % 7 === 0) row.cost = 3;
    lines.push(JSON.stringify(row));
  }
  return lines.join('\n');
}

describe('a replayed trace', () => {
  const rows = parseTrace(jsonLinesTrace(), 'jsonl', 'trace.jsonl');
  const scenario = {
    durationMs: 2500,
    bucketMs: 25,
    traffic: [{ type: 'trace', rows }],
    policies: [
      { name: 'log', policy: { type: 'sliding-window-log', limit: 40, windowMs: 1000 } },
      {
        name: 'gcra wait',
        mode: 'wait',
        maxWaitMs: 100,
        policy: { type: 'gcra', rate: 40, periodMs: 1000, maxBurst: 9 },
      },
      {
        name: 'three nodes',
        policy: { type: 'token-bucket', capacity: 10, refillPerSecond: 40 },
        distribution: { nodes: 3, roundTripMs: 1, roundTripJitterMs: 2, maxSkewMs: 20 },
      },
    ],
  };

  it('gives the same summary twice, and the same bytes of SVG and HTML', async () => {
    const first = await simulate(scenario);
    const second = await simulate(scenario);
    assert.equal(first.arrivals.keys.length, 30);
    assert.ok(first.arrivals.length > 3000 * 0.9, 'the trace is replayed up to durationMs');
    assert.equal(renderJsonSummary(first), renderJsonSummary(second));
    assert.equal(renderTextSummary(first), renderTextSummary(second));
    const [a, b] = [renderCharts(first), renderCharts(second)];
    assert.deepEqual(
      a.map((c) => c.svg),
      b.map((c) => c.svg),
    );
    assert.equal(renderHtmlReport(first, a), renderHtmlReport(second, b));
    for (const lane of first.lanes)
      assert.ok(lane.score.admitted > 0 && lane.score.refused > 0, `${lane.name} both admits and refuses`);
  });

  it('replays the trace exactly: its times, keys and costs', async () => {
    const result = await simulate(scenario);
    const kept = rows.filter((r) => r.atMs < 2500);
    assert.equal(result.arrivals.length, kept.length);
    kept.forEach((row, i) => {
      assert.equal(result.arrivals.atMs[i], row.atMs);
      assert.equal(result.arrivals.keys[result.arrivals.keyIds[i]!], row.key);
      assert.equal(result.arrivals.costs[i], row.cost ?? 1);
    });
  });
});
