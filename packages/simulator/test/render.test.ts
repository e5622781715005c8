import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { renderLineChart } from '../src/index.js';
import { formatNumber, niceTicks } from '../src/render/format.js';

describe('the SVG line chart', () => {
  const values = Float64Array.from([0, 5, 10, 7.5]);

  it('escapes names, draws one group per series and grows to hold a long legend', () => {
    const series = Array.from({ length: 20 }, (_, i) => ({
      name: `<lane "${i}">`,
      color: '#123456',
      lines: [{ kind: 'admitted', values }],
    }));
    const svg = renderLineChart({ id: 'many', title: 'A & B', yLabel: 'y', stepMs: 250, series });
    assert.equal((svg.match(/<g class="series"/g) ?? []).length, 20);
    assert.ok(svg.includes('data-name="&lt;lane &quot;3&quot;&gt;"'));
    assert.ok(!svg.includes('<lane'), 'no raw name in the markup');
    assert.ok(svg.includes('<title id="many-title">A &amp; B</title>'));
    const height = Number(/height="(\d+)" viewBox/.exec(svg)![1]);
    assert.ok(height >= 44 + 20 * 20, `height ${height} holds 20 legend rows`);
  });

  it('puts points at the middle of each step, on round ticks', () => {
    const svg = renderLineChart({
      id: 'one',
      title: 't',
      yLabel: 'y',
      stepMs: 250,
      series: [{ name: 'a', color: '#000000', lines: [{ kind: 'admitted', values }] }],
    });
    // 4 steps of 250 ms: x from 0 to 1 s; points at 0.125, 0.375, ... s; y up to 10.5 (the top value plus 5%), ticks of 5 to 15.
    assert.match(svg, /<path class="line admitted" d="M(\d+(\.\d+)?) 320 L/);
    assert.deepEqual(
      [...svg.matchAll(/<g class="tick">.*?<text[^>]*>([^<]+)<\/text><\/g>/g)].map((m) => m[1]),
      ['0', '0.2', '0.4', '0.6', '0.8', '1', '0', '5', '10', '15'],
    );
  });

  it('formats numbers stably', () => {
    assert.deepEqual(
      [formatNumber(1 / 3), formatNumber(2), formatNumber(-0.0001), formatNumber(Infinity), formatNumber(NaN)],
      ['0.333', '2', '0', 'Infinity', 'n/a'],
    );
    assert.deepEqual(niceTicks(9.5), [0, 2, 4, 6, 8, 10]);
    assert.deepEqual(niceTicks(0), [0, 1]);
  });
});
