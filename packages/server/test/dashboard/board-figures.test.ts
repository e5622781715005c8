// The board's figures beside the decisions: a shadow rule's would-admit and would-refuse, a queue's
// depth, upstream latency per route, the rate limit service's decisions, and this process's name.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ManualClock } from 'floodgate';
import { Board } from '../../src/dashboard/board.js';
import { keyShower } from '../../src/dashboard/keys.js';
import { QueueDepth } from '../../src/dashboard/queue-depth.js';
import { renderLive } from '../../src/dashboard/render.js';
import { ServiceDecisions } from '../../src/dashboard/service-decisions.js';
import { UpstreamLatency } from '../../src/dashboard/upstream-latency.js';
import { snapshot, type DashboardSource } from '../../src/dashboard/view.js';

const START_MS = Date.UTC(2026, 0, 2, 3, 4, 5);

function sourceOf(board: Board, storeKind = 'memory'): DashboardSource {
  return {
    board,
    rules: () => [
      { route: 'api', rule: 'trial', mode: 'shadow', policy: '"trial";q=10;w=1' },
      { route: 'uploads', rule: 'line', mode: 'queue', policy: '"line";q=1;w=1' },
    ],
    routes: () => ['api', 'uploads', 'slow'],
    process: { host: 'gw-1', pid: 4242, port: 8080, adminPort: 9090 },
    activeConfig: () => ({ file: 'floodgate.yaml', loadedAt: new Date(START_MS).toISOString(), config: {} }),
    isReady: () => true,
    storeKind,
    showKey: keyShower('full'),
  };
}

describe('a shadow rule on the board', () => {
  it('splits into would-admit and would-refuse (identity refusals included), with the share it would refuse', () => {
    const clock = new ManualClock(START_MS);
    const board = new Board({ clock });
    for (let s = 0; s < 10; s++) {
      for (let i = 0; i < 3; i++) board.outcome('api', 'trial', 'shadow_admitted');
      board.outcome('api', 'trial', 'shadow_limited');
      clock.advance(1_000);
    }
    board.outcome('api', 'trial', 'shadow_identity_refused');
    const view = snapshot(sourceOf(board));
    const trial = view.rules.find((r) => r.rule === 'trial')!;
    assert.equal(trial.rates.wouldAdmit.total, 30);
    assert.equal(trial.rates.wouldRefuse.total, 11);
    assert.equal(trial.rates.wouldAdmit.perSecond, 3);
    assert.equal(trial.rates.wouldRefuse.perSecond, 1);
    assert.equal(trial.wouldRefuseSeries!.at(-1), 1, 'the unfinished second holds the identity refusal');
    const html = renderLive(view);
    assert.match(html, /<th class="num">shadow: would refuse<\/th>/);
    assert.match(html, /<span class="total-wouldRefuse">11<\/span> <span class="share">\(26\.8%\)<\/span><\/td>/);
    assert.match(html, /<polyline class="would-refuse"/);
  });
});

describe('QueueDepth', () => {
  it('keeps the depth now and the deepest per second; a second without moves keeps the depth it began with', () => {
    const q = new QueueDepth();
    const t0 = 10_000;
    q.move(1, t0);
    q.move(1, t0 + 100);
    q.move(1, t0 + 200);
    q.move(-1, t0 + 300);
    assert.equal(q.depth, 2);
    q.move(-1, t0 + 2_500);
    const series = q.series(t0 + 3_100);
    assert.deepEqual(series.slice(-4), [3, 2, 2, 1], 'peaks of seconds 10, 11 (no move: 2), 12, and 13 (now: 1)');
    assert.equal(q.peak(10, t0 + 3_100), 3);
    assert.equal(q.peak(2, t0 + 3_100), 2);
    q.move(-5, t0 + 3_200);
    assert.equal(q.depth, 0, 'never below 0');
    q.move(1, t0 - 5_000);
    assert.equal(q.depth, 1, 'time going backwards counts in the latest second');
    assert.equal(q.series(t0 + 3_200).at(-1), 1);
  });

  it('shows on the board for a queue-mode rule only', () => {
    const clock = new ManualClock(START_MS);
    const board = new Board({ clock });
    board.queueDepth('uploads', 'line', 1);
    board.queueDepth('uploads', 'line', 1);
    clock.advance(1_000);
    board.queueDepth('uploads', 'line', -1);
    const view = snapshot(sourceOf(board));
    assert.deepEqual(
      { depth: view.rules[1]!.queue!.depth, peak: view.rules[1]!.queue!.peak10s },
      { depth: 1, peak: 2 },
    );
    assert.equal(view.rules[0]!.queue, undefined);
    assert.match(renderLive(view), /<td class="num queue" data-label="queue now \/ peak 10 s">1 \/ 2<\/td>/);
  });
});

describe('UpstreamLatency', () => {
  it('gives percentiles and 5xx per route over the window, forgetting routes no longer configured', () => {
    const latency = new UpstreamLatency();
    for (let i = 1; i <= 100; i++) latency.record('api', i === 100 ? 502 : 200, i, 1_000 + i);
    latency.record('api', 200, 5_000, -20_000);
    const v = latency.view('api', 10_000, 2_000);
    assert.deepEqual(v, { requests: 100, serverErrors: 1, p50Ms: 50, p99Ms: 99, maxMs: 100 });
    assert.equal(latency.view('other', 10_000, 2_000).requests, 0);
    latency.retain(new Set(['other']));
    assert.equal(latency.view('api', 10_000, 2_000).requests, 0);
  });

  it('shows each configured route on the board, a route without rules included', () => {
    const clock = new ManualClock(START_MS);
    const board = new Board({ clock });
    board.upstream('slow', 200, 2_000);
    board.upstream('slow', 504, 3_000);
    const view = snapshot(sourceOf(board));
    assert.deepEqual(
      view.upstreams.map((u) => [u.route, u.upstream.requests, u.upstream.serverErrors, u.upstream.maxMs]),
      [
        ['api', 0, 0, undefined],
        ['uploads', 0, 0, undefined],
        ['slow', 2, 1, 3_000],
      ],
    );
    assert.match(renderLive(view), /<tr data-route="slow"><td>slow<\/td><td class="num requests">2<\/td>/);
  });
});

describe('ServiceDecisions', () => {
  it("counts the rate limit service's decisions per domain and descriptor, by group", () => {
    const service = new ServiceDecisions();
    for (let i = 0; i < 10; i++) service.record('api', 'tenant_a', i < 7 ? 'admitted' : 'limited', 1_000 * i);
    service.record('api', 'tenant_a', 'fallback', 9_500);
    service.record('api', 'tenant_a', 'peek_limited', 9_600);
    service.record('api', 'tenant_a', 'no-such-outcome', 9_600);
    service.record('api', 'tenant_a', 'shadow_limited', 9_600);
    service.record('api', 'tenant_a', 'quota_limited', 9_600);
    service.record('api', 'tenant_a', 'store_full', 9_600);
    service.record('api', 'tenant_a', 'peek_shadow_limited', 9_600);
    service.record('a', 'x', 'admitted', 9_700);
    const rows = service.rows(10, 10_000);
    assert.deepEqual(
      rows.map((r) => [r.domain, r.descriptor]),
      [
        ['a', 'x'],
        ['api', 'tenant_a'],
      ],
    );
    const t = rows[1]!.rates;
    assert.deepEqual(
      [t.admitted.total, t.limited.total, t.over.total, t.degraded.total, t.asked.total],
      [7, 3, 2, 2, 2],
      'every outcome the service reports lands in a column: shadow and quota apart, the memory store full as degraded',
    );
    assert.equal(t.admitted.perSecond, 0.7);
  });

  it('holds at most 256 descriptors apart, counting the rest under (other)', () => {
    const service = new ServiceDecisions();
    for (let i = 0; i < 300; i++) service.record('d', `k${i}`, 'admitted', 0);
    const rows = service.rows(10, 0);
    assert.equal(rows.length, 257);
    assert.equal(rows.find((r) => r.descriptor === '(other)')!.rates.admitted.total, 44);
  });

  it('shows on the board beside the gateway, and not at all without a service', () => {
    const clock = new ManualClock(START_MS);
    const board = new Board({ clock });
    assert.doesNotMatch(renderLive(snapshot(sourceOf(board))), /id="service"/);
    board.serviceDecision('api', 'tenant_a', 'limited');
    const html = renderLive(snapshot(sourceOf(board)));
    assert.match(html, /<section id="service"><h2>Rate limit service/);
    assert.match(html, /<tr data-domain="api" data-descriptor="tenant_a">.*<span class="total-limited">1<\/span>/);
  });
});

describe("this process's name", () => {
  it('heads the page, and says on a shared store that the counts are this process’s', () => {
    const board = new Board({ clock: new ManualClock(START_MS) });
    const memory = renderLive(snapshot(sourceOf(board)));
    assert.match(
      memory,
      /<span id="process" data-host="gw-1" data-pid="4242">gw-1 pid 4242 \(port 8080, admin 9090\)<\/span>/,
    );
    assert.doesNotMatch(memory, /each gateway process on the store/);
    assert.match(
      renderLive(snapshot(sourceOf(board, 'redis'))),
      /every process on the store is listed under Gateway processes/,
    );
  });
});
