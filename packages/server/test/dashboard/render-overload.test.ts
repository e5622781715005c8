import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ManualClock, type ConcurrencySnapshot } from 'floodgate';
import { Board } from '../../src/dashboard/board.js';
import { roundUp, timeChart } from '../../src/dashboard/chart.js';
import { keyShower } from '../../src/dashboard/keys.js';
import type { OverloadGuard } from '../../src/dashboard/overload.js';
import { renderPage } from '../../src/dashboard/page.js';
import { renderOverload } from '../../src/dashboard/render-overload.js';
import { renderLive } from '../../src/dashboard/render.js';
import { snapshot, type DashboardSource } from '../../src/dashboard/view.js';

const START_MS = Date.UTC(2026, 0, 2, 3, 4, 5);
const EVIL = 'route:<img src=x onerror=alert(1)>&"\'';

function sourceOf(board: Board): DashboardSource {
  return {
    board,
    rules: () => [],
    activeConfig: () => ({ file: 'floodgate.yaml', loadedAt: new Date(START_MS).toISOString(), config: {} }),
    isReady: () => true,
    routes: () => [],
    process: { host: 'gw-1', pid: 4242, port: 8080, adminPort: 9090 },
    storeKind: 'memory',
    showKey: keyShower('full'),
  };
}

/** A board that followed an adaptive scope (named to need escaping), a fixed one with sheds, and a circuit, for 30 s. */
function boardUnderLoad(): { board: Board; clock: ManualClock } {
  const clock = new ManualClock(START_MS);
  const board = new Board({ clock });
  let adaptive: ConcurrencySnapshot = {
    limit: 20,
    inFlight: 0,
    queued: 0,
    adaptive: { limit: 20, estimate: 20, baselineRttMs: 10, sampleRttMs: 10, probing: false },
  };
  let fixed: ConcurrencySnapshot = { limit: 2, inFlight: 0, queued: 0, adaptive: undefined };
  let state = 'closed';
  const guards: OverloadGuard[] = [
    { scope: EVIL, limiter: { snapshot: () => adaptive }, breaker: undefined },
    { scope: 'route:bulk', limiter: { snapshot: () => fixed }, breaker: undefined },
    {
      scope: 'upstream:payments',
      limiter: undefined,
      breaker: {
        get state() {
          return state;
        },
        retryInMs: () => (state === 'open' ? 432 : 0),
      },
    },
  ];
  let shed = 0;
  board.overload.follow({
    guards: () => guards,
    shedTotals: () => [
      { scope: 'route:bulk', reason: 'limit', total: shed },
      { scope: 'route:bulk', reason: 'queue-timeout', total: Math.floor(shed / 4) },
    ],
  });
  for (let s = 0; s < 30; s++) {
    const load = Math.min(s, 12);
    adaptive = {
      limit: 20 - Math.floor(load / 2),
      inFlight: load,
      queued: Math.max(0, load - 10),
      adaptive: {
        limit: 20 - Math.floor(load / 2),
        estimate: 20,
        baselineRttMs: 10,
        sampleRttMs: 10 + load * 2.5,
        probing: s === 29,
      },
    };
    fixed = { ...fixed, inFlight: 2, queued: 1 };
    shed += 2;
    if (s === 20) {
      state = 'open';
      board.overload.circuitTransition('upstream:payments', 'open');
    }
    clock.advance(1_000);
  }
  return { board, clock };
}

describe('the Overload protection section', () => {
  it('shows each scope with its figures now, its charts, its sheds by reason and its circuit', () => {
    const { board, clock } = boardUnderLoad();
    const view = snapshot(sourceOf(board));
    const html = renderOverload(view.overload, clock.now());
    assert.match(html, /^<section id="overload"><h2>Overload protection<\/h2>/);
    const cards = html.split('<div class="card overload-scope"').slice(1);
    assert.equal(cards.length, 3);
    const [adaptive, bulk, payments] = cards as [string, string, string];
    assert.match(
      adaptive,
      /limit <b class="limit">14<\/b> · in flight <b class="in-flight">12<\/b> · queued <b class="queued">2<\/b> · latency <b class="sample-rtt">40\.0<\/b> ms, baseline <b class="baseline-rtt">10\.0<\/b> ms · <span class="probing">/,
    );
    assert.match(adaptive, /<svg class="chart concurrency"[^>]*aria-label="route:&lt;img/);
    assert.match(adaptive, /<path class="line-limit" d="M[\d. L]+"/);
    assert.match(adaptive, /<path class="line-in-flight" d="M[\d. L]+"/);
    assert.match(adaptive, /<svg class="chart latency"/);
    assert.match(adaptive, /<path class="line-sample-rtt" d="M[\d. L]+"/);
    assert.match(adaptive, />50 ms<\/text>/, 'the latency axis tops at a round figure above 40 ms');
    assert.match(adaptive, /No request shed in the last 120 s/);
    assert.match(bulk, /a fixed limit: no latency estimate/);
    assert.ok(!bulk.includes('chart latency'), 'no latency chart for a fixed limit');
    assert.match(
      bulk,
      /<tr data-reason="limit"><td>limit<\/td><td class="num shed-rate">2\.00<\/td><td class="num shed-window">60<\/td><\/tr>/,
    );
    assert.match(bulk, /<tr data-reason="queue-timeout"><td>queue-timeout<\/td>/);
    assert.ok(
      bulk.indexOf('data-reason="limit"') < bulk.indexOf('data-reason="queue-timeout"'),
      'reasons in their fixed order',
    );
    assert.match(
      payments,
      /circuit <span class="circuit-state state-open">open<\/span> · retry in <b class="retry-in">432<\/b> ms/,
    );
    assert.match(
      payments,
      /<tr><td><time>03:04:25\.000<\/time><\/td><td>closed → open<\/td><td><span class="note">not reported<\/span><\/td><\/tr>/,
    );
    assert.match(payments, /<svg class="circuit-strip"[^>]*>.*fill="#c62828"/);
    assert.ok(!payments.includes('class="chart'), 'a circuit alone draws no concurrency chart');
  });

  it('escapes every name: no markup from a scope reaches the page', () => {
    const { board, clock } = boardUnderLoad();
    const html = renderOverload(snapshot(sourceOf(board)).overload, clock.now());
    assert.ok(!html.includes('<img'), 'the scope is never raw markup');
    assert.match(html, /data-scope="route:&lt;img src=x onerror=alert\(1\)&gt;&amp;&quot;&#39;"/);
    assert.match(html, /<h3>route:&lt;img src=x onerror=alert\(1\)&gt;&amp;&quot;&#39;<\/h3>/);
  });

  it('says so when no guard is configured, and is part of the live fragment and of the page', () => {
    const board = new Board({ clock: new ManualClock(START_MS) });
    const view = snapshot(sourceOf(board));
    assert.match(renderOverload(view.overload, view.atMs), /No route or upstream has a <code>concurrency<\/code>/);
    const { board: loaded } = boardUnderLoad();
    const live = renderLive(snapshot(sourceOf(loaded)));
    assert.ok(
      live.indexOf('id="rates"') < live.indexOf('id="overload"') &&
        live.indexOf('id="overload"') < live.indexOf('id="keys"'),
      'after the decisions, before the top keys',
    );
    assert.match(
      renderPage(snapshot(sourceOf(loaded)), 'n0nce'),
      /<main id="live">[\s\S]*id="overload"[\s\S]*<\/main>/,
    );
  });
});

describe('timeChart', () => {
  it('places points by time, breaks a line at a gap or a missing value, and marks a lone point', () => {
    const svg = timeChart({
      lines: [
        {
          name: 'a',
          color: '#000',
          points: [
            [0, 0],
            [1_000, 10],
            [2_000, undefined],
            [3_000, 5],
            [10_000, 5],
            [11_000, 10],
          ],
        },
      ],
      fromMs: 0,
      toMs: 12_000,
      unit: '',
      label: 'a',
      className: 'test',
    });
    const d = /<path class="line-a" d="([^"]+)"/.exec(svg)![1]!;
    assert.equal(d.split('M').length - 1, 3, `three segments: ${d}`);
    assert.match(d, /M[\d.]+ [\d.]+h2/, 'the lone point at 3 s gets a tick');
    assert.match(svg, />10<\/text>/, 'the axis tops at 10');
    assert.match(svg, />−12 s<\/text>/);
  });

  it('rounds its axis up to 1, 2 or 5 times a power of ten', () => {
    assert.deepEqual([1, 1.5, 3, 7, 10, 11, 40, 99, 120, 0.3].map(roundUp), [1, 2, 5, 10, 10, 20, 50, 100, 200, 0.5]);
  });
});
