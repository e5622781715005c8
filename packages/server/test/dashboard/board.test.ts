import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ManualClock, type Decision } from 'floodgate';
import { Board } from '../../src/dashboard/board.js';
import { keyShower, type KeyDisplay } from '../../src/dashboard/keys.js';
import { renderPage } from '../../src/dashboard/page.js';
import { renderLive } from '../../src/dashboard/render.js';
import { snapshot, type DashboardSource } from '../../src/dashboard/view.js';
import type { RuleOutcome } from '../../src/outcomes.js';

const START_MS = Date.UTC(2026, 0, 2, 3, 4, 5);

function decision(allowed: boolean, remaining: number, limit = 10): Decision {
  return {
    allowed,
    limit,
    remaining,
    retryAfterMs: allowed ? 0 : 750,
    resetMs: 1_000,
    reason: allowed ? 'ok' : 'limit',
  } as Decision;
}

function sourceOf(board: Board, keys: KeyDisplay = 'full'): DashboardSource {
  return {
    board,
    rules: () => [
      { route: 'api', rule: 'per-ip', mode: 'enforce', policy: '"per-ip";q=10;w=1' },
      { route: 'api', rule: 'trial', mode: 'shadow', policy: '"trial";q=10;w=1' },
    ],
    activeConfig: () => ({
      file: '/etc/floodgate.yaml',
      loadedAt: new Date(START_MS).toISOString(),
      config: { admin: { token: '[redacted]' }, routes: [{ name: 'api' }] },
    }),
    isReady: () => true,
    routes: () => ['api'],
    process: { host: 'gw-1', pid: 4242, port: 8080, adminPort: 9090 },
    storeKind: 'redis',
    showKey: keyShower(keys, new Uint8Array(32)),
  };
}

/** Feeds one decision the way the gateway's reporter does: the outcome, then the decision with its key. */
function feed(board: Board, rule: string, key: string, d: Decision, outcome: RuleOutcome): void {
  board.outcome('api', rule, outcome);
  board.decided({ route: 'api', rule, key: `api/${rule}/${key}`, outcome, decision: d, reason: d.reason });
}

describe('Board and its snapshot', () => {
  it('shows rates per rule, the throttled key on top, the nearest keys and why requests were refused', () => {
    const clock = new ManualClock(START_MS);
    const board = new Board({ clock });
    for (let s = 0; s < 10; s++) {
      for (let i = 0; i < 4; i++) feed(board, 'per-ip', `ip:10.0.0.${i}`, decision(true, 8), 'admitted');
      feed(board, 'per-ip', 'ip:192.0.2.66', decision(false, 0), 'limited');
      feed(board, 'per-ip', 'ip:192.0.2.66', decision(false, 0), 'limited');
      feed(board, 'per-ip', 'ip:10.0.0.9', decision(true, 1), 'near_limit');
      feed(board, 'trial', 'ip:10.0.0.1', decision(false, 0), 'shadow_limited');
      clock.advance(1_000);
    }
    const view = snapshot(sourceOf(board));
    const perIp = view.rules.find((r) => r.rule === 'per-ip')!;
    assert.equal(perIp.rates.admitted.perSecond, 5, '4 admitted and 1 near-limit per second');
    assert.equal(perIp.rates.limited.perSecond, 2);
    assert.equal(perIp.rates.limited.total, 20);
    assert.equal(perIp.overLimit[0]!.key, 'ip:192.0.2.66', 'the throttled key leads, shown without the rule prefix');
    // After one half-life (10 s) of a steady 2/s, the decayed rate has come half way: 1/s (a little less, read 1 s after the last).
    assert.ok(
      perIp.overLimit[0]!.perSecond > 0.9 && perIp.overLimit[0]!.perSecond < 1.05,
      `${perIp.overLimit[0]!.perSecond}`,
    );
    assert.equal(perIp.near[0]!.key, 'ip:192.0.2.66');
    assert.equal(perIp.near[1]!.key, 'ip:10.0.0.9');
    const trial = view.rules.find((r) => r.rule === 'trial')!;
    assert.equal(trial.rates.wouldRefuse.total, 10, 'a shadow rule counts what it would refuse');
    assert.equal(trial.rates.wouldAdmit.total, 0);
    assert.equal(trial.overLimit[0]!.key, 'ip:10.0.0.1', 'a shadow rule shows who it would limit');
    assert.equal(view.refusalsTotal, 20, 'shadow decisions refuse nothing');
    assert.deepEqual(
      { ...view.refusals[0]! },
      {
        route: 'api',
        rule: 'per-ip',
        key: 'ip:192.0.2.66',
        limit: 10,
        remaining: 0,
        retryAfterMs: 750,
        reason: 'limit',
        atMs: START_MS + 9_000,
      },
    );
    assert.equal(view.store.kind, 'redis');
  });

  it('averages rates over the seconds since the start while fewer than 10 have passed', () => {
    const clock = new ManualClock(START_MS);
    const board = new Board({ clock });
    for (let s = 0; s < 3; s++) {
      for (let i = 0; i < 4; i++) board.outcome('api', 'per-ip', 'admitted');
      clock.advance(1_000);
    }
    assert.equal(board.rates('api', 'per-ip').admitted.perSecond, 4);
  });

  it('stays bounded under a flood of distinct keys, and still finds the one heavy key in it', () => {
    const clock = new ManualClock(START_MS);
    const board = new Board({ clock });
    for (let i = 0; i < 100_000; i++) {
      feed(board, 'per-ip', `ip:flood-${i}`, decision(false, 0), 'limited');
      if (i % 4 === 0) feed(board, 'per-ip', 'ip:heavy', decision(false, 0), 'limited');
      if (i % 1_000 === 0) clock.advance(100);
    }
    const b = board.boardOf('api', 'per-ip');
    assert.equal(b.overLimit.size, 64);
    assert.ok(b.near.size <= 32);
    assert.equal(board.latestRefusals(1_000).length, 200);
    const top = snapshot(sourceOf(board)).rules[0]!.overLimit;
    assert.equal(top[0]!.key, 'ip:heavy', 'a key with a fifth of the refusals stands out of 100,000');
    assert.ok(top[0]!.errorPerSecond <= top[0]!.perSecond / 4, 'its error is small beside its count');
  });

  it('records queue refusals with their error, and keys a removed rule no longer', () => {
    const clock = new ManualClock(START_MS);
    const board = new Board({ clock });
    board.outcome('api', 'per-ip', 'queue_rejected');
    board.decided({
      route: 'api',
      rule: 'per-ip',
      key: 'api/per-ip/route',
      outcome: 'queue_rejected',
      decision: undefined,
      reason: 'QUEUE_FULL',
    });
    feed(board, 'gone', 'ip:10.0.0.1', decision(false, 0), 'limited');
    const view = snapshot(sourceOf(board));
    assert.deepEqual(
      view.refusals.map((r) => [r.rule, r.reason]),
      [
        ['gone', 'limit'],
        ['per-ip', 'QUEUE_FULL'],
      ],
    );
    assert.deepEqual(
      view.rules.map((r) => r.rule),
      ['per-ip', 'trial'],
    );
    assert.equal(board.boardOf('api', 'gone').series.total('limited'), 0, "the removed rule's board was dropped");
  });

  it('refuses fail-closed into the ring only: a store failure puts no key near or over its limit', () => {
    const board = new Board({ clock: new ManualClock(START_MS) });
    const closed = { ...decision(false, 0), reason: 'fail-closed' } as Decision;
    feed(board, 'per-ip', 'ip:10.0.0.1', closed, 'fail_closed');
    feed(board, 'per-ip', 'ip:10.0.0.2', { ...decision(true, 0), reason: 'fail-open' } as Decision, 'fail_open');
    const view = snapshot(sourceOf(board));
    const perIp = view.rules.find((r) => r.rule === 'per-ip')!;
    assert.deepEqual(
      view.refusals.map((r) => [r.key, r.reason]),
      [['ip:10.0.0.1', 'fail-closed']],
    );
    assert.deepEqual(perIp.overLimit, []);
    assert.deepEqual(perIp.near, []);
    assert.equal(perIp.rates.degraded.total, 2);
  });

  it('reports store latency, failures and circuits from the store observer', () => {
    const clock = new ManualClock(START_MS);
    const board = new Board({ clock });
    const observer = board.observer;
    for (let i = 1; i <= 100; i++)
      observer.storeCall!({ store: 'redis', operation: 'consume', durationMs: i / 10, ok: i !== 100 });
    observer.storeError!({
      store: 'redis',
      error: new Error('connection refused'),
      policy: 'fail-open',
      atMs: clock.now(),
    });
    observer.circuit!({ store: 'redis', node: '127.0.0.1:7001', state: 'open', atMs: clock.now() });
    let health = snapshot(sourceOf(board)).store.health;
    assert.deepEqual(
      [health.calls, health.failedCalls, health.p50Ms, health.p99Ms, health.maxMs],
      [100, 1, 5, 9.9, 10],
    );
    assert.deepEqual(health.errorsByPolicy, { 'fail-open': 1 });
    assert.equal(health.lastError!.message, 'connection refused');
    assert.deepEqual(health.circuits, { '127.0.0.1:7001': 'open' });
    clock.advance(10_001);
    health = snapshot(sourceOf(board)).store.health;
    assert.equal(health.calls, 0, 'round trips older than the window are left out');
    assert.equal(health.p99Ms, undefined);
  });

  it('renders every number into the HTML and escapes what clients send', () => {
    const clock = new ManualClock(START_MS);
    const board = new Board({ clock });
    feed(board, 'per-ip', 'h:<script>alert(1)</script>', decision(false, 0), 'limited');
    clock.advance(1_000);
    const view = snapshot(sourceOf(board));
    const html = renderPage(view, 'n0nce');
    assert.ok(!html.includes('<script>alert(1)'), 'a key is never markup');
    assert.ok(html.includes('h:&lt;script&gt;alert(1)&lt;/script&gt;'));
    assert.match(html, /<span class="total-limited">1<\/span>/);
    assert.match(html, /<span class="rate-limited">1\.00<\/span>/, 'one refusal in the one second seen');
    assert.ok(html.includes('<time>03:04:05.000</time>'), 'the refusal time in UTC');
    assert.ok(html.includes('/etc/floodgate.yaml') && html.includes('[redacted]'));
    assert.ok(!/https?:\/\//.test(html), 'no external URL');
    assert.equal((html.match(/<script nonce="n0nce">/g) ?? []).length, 1);
    assert.ok(renderLive(view).includes('id="refusals"'));
  });

  it('shows keys truncated or as a keyed hash when configured', () => {
    const long = 'api/per-ip/h:' + 'x'.repeat(40);
    assert.equal(keyShower('truncate')(long, 'api', 'per-ip'), `h:${'x'.repeat(22)}…`);
    const secret = new Uint8Array(32).fill(7);
    const hashed = keyShower('hash', secret)('api/per-ip/ip:192.0.2.1', 'api', 'per-ip');
    assert.match(hashed, /^#[A-Za-z0-9_-]{12}$/);
    assert.equal(
      keyShower('hash', secret)('api/per-ip/ip:192.0.2.1', 'api', 'per-ip'),
      hashed,
      'stable under one secret',
    );
    assert.notEqual(
      keyShower('hash', new Uint8Array(32))('api/per-ip/ip:192.0.2.1', 'api', 'per-ip'),
      hashed,
      'unguessable without it',
    );
    const board = new Board({ clock: new ManualClock(START_MS) });
    feed(board, 'per-ip', 'ip:192.0.2.1', decision(false, 0), 'limited');
    const html = renderLive(snapshot(sourceOf(board, 'hash')));
    assert.ok(!html.includes('192.0.2.1'), 'the hashed dashboard never shows the key');
  });
});
