import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { performance } from 'node:perf_hooks';
import { Redis } from 'ioredis';
import { FloodgateError, fixedWindow, tokenBucket, type Decision, type PolicyStore } from '../../src/index.js';
import { RedisStore, ioredisAdapter, type RedisAdapter } from '../../src/stores/redis/index.js';
import { startRedisServer, type RedisServers } from '../support/redis-server.js';
import { Load, firstHealthyMs, sleep, type Sample } from './fault-load.js';

// One Redis, killed and restarted, then hung (SIGSTOP) and resumed, under a steady load on four
// limiters sharing one store: throw, fail-open, fail-closed and a local fallback with half the limit.
const TIMEOUT_MS = 300;
const MARGIN_MS = 400;
const OUTAGE_MS = 1500;
const FALLBACK_LIMIT = 40;

let servers: RedisServers;
let client: Redis;
let sent = 0;
const unhandled: unknown[] = [];
const onUnhandled = (reason: unknown): void => void unhandled.push(reason);

before(async () => {
  servers = await startRedisServer();
  client = new Redis({ host: '127.0.0.1', port: servers.ports[0]!, retryStrategy: () => 50, maxRetriesPerRequest: 1 });
  client.on('error', () => {}); // connection errors while Redis is away are expected; the store reports them
  process.on('unhandledRejection', onUnhandled);
});

after(async () => {
  process.off('unhandledRejection', onUnhandled);
  client.disconnect();
  await servers.stop();
});

function counted(adapter: RedisAdapter): RedisAdapter {
  return {
    cluster: false,
    evalsha: (sha1, keys, args) => (sent++, adapter.evalsha(sha1, keys, args)),
    eval: (script, keys, args) => (sent++, adapter.eval(script, keys, args)),
  };
}

/** A load on four policies of one store, and a second table under the local fallback to probe by hand. */
function loadOn(prefix: string): { load: Load; fallback: PolicyStore } {
  const store = new RedisStore({
    adapter: counted(ioredisAdapter(client)),
    prefix,
    timeoutMs: TIMEOUT_MS,
    probeIntervalMs: 200,
  });
  const roomy = tokenBucket({ capacity: 1e6, refillPerSecond: 1e6 });
  const fallback = store
    .withOnError({ fallback: 'local', share: 0.5 })
    .bind(fixedWindow({ limit: FALLBACK_LIMIT, windowMs: 60_000 }));
  const load = new Load({
    keys: 20,
    perTick: 2,
    tables: {
      throw: store.withOnError('throw').bind(roomy),
      open: store.withOnError('fail-open').bind(roomy),
      closed: store.withOnError('fail-closed').bind(roomy),
      local: store
        .withOnError({ fallback: 'local', share: 0.5 })
        .bind(fixedWindow({ limit: FALLBACK_LIMIT, windowMs: 60_000 })),
    },
  });
  return { load, fallback };
}

/**
 * probeFallback sends, during an outage, three shares' worth of requests one after another on a
 * key the load never uses: the local fallback decides them all, admits at most its share (twice
 * that if its window turns over meanwhile) and refuses the rest. The load alone may not send a
 * key past its share before Redis is back on a busy machine; this does, whatever the machine.
 */
async function probeFallback(fallback: PolicyStore): Promise<void> {
  const share = FALLBACK_LIMIT / 2;
  const decisions: Decision[] = [];
  for (let i = 0; i < 3 * share; i++) decisions.push(await fallback.consume('probe', 1, 0));
  assert.ok(
    decisions.every((d) => d.reason === 'fallback'),
    `the fallback decides during the outage: ${decisions.map((d) => d.reason).join(',')}`,
  );
  const admitted = decisions.filter((d) => d.allowed).length;
  assert.ok(
    admitted >= share && admitted <= 2 * share,
    `the fallback admitted ${admitted} of ${3 * share}, its share is ${share}`,
  );
}

/** Checks that each policy did what it promised for the requests asked during the outage. */
function checkPolicies(load: Load, fromMs: number, untilMs: number): void {
  const failed = (name: string): Sample[] =>
    load
      .since(name, fromMs, untilMs)
      .filter((s) => s.decision === undefined || !['ok', 'limit'].includes(s.decision.reason));
  for (const name of ['open', 'closed', 'local']) {
    assert.ok(
      load.since(name, fromMs, untilMs).every((s) => s.decision !== undefined),
      `${name}: no request rejected`,
    );
  }
  const open = failed('open');
  assert.ok(open.length > 50, `fail-open decided ${open.length} requests`);
  assert.ok(open.every((s) => s.decision!.allowed && s.decision!.reason === 'fail-open'));
  assert.ok(failed('closed').every((s) => !s.decision!.allowed && s.decision!.reason === 'fail-closed'));
  const local = failed('local');
  assert.ok(local.every((s) => s.decision!.reason === 'fallback'));
  const admitted = new Map<string, number>();
  for (const s of local) if (s.decision!.allowed) admitted.set(s.key, (admitted.get(s.key) ?? 0) + 1);
  assert.ok(Math.max(...admitted.values()) <= FALLBACK_LIMIT / 2, 'the fallback admits at most its share per key');
  const thrown = failed('throw');
  assert.ok(
    thrown.every(
      (s) => s.error instanceof FloodgateError && (s.error.code === 'STORE_ERROR' || s.error.code === 'STORE_TIMEOUT'),
    ),
  );
}

function checkSettledInTime(load: Load): void {
  const slowest = Math.max(...load.samples.map((s) => s.latencyMs));
  assert.ok(slowest <= TIMEOUT_MS + MARGIN_MS, `a decision took ${slowest} ms`);
  assert.deepEqual(unhandled, []);
}

function checkRecovered(load: Load, backMs: number, report: (message: string) => void): void {
  for (const name of ['throw', 'open', 'closed', 'local']) {
    const healthyMs = firstHealthyMs(load.since(name, backMs), backMs);
    report(
      `${name}: healthy ${healthyMs === undefined ? 'never' : Math.round(healthyMs - backMs)} ms after Redis was back`,
    );
    assert.ok(
      healthyMs !== undefined && healthyMs - backMs <= 1000,
      `${name}: healthy ${healthyMs === undefined ? 'never' : `${Math.round(healthyMs - backMs)} ms`} after Redis was back`,
    );
  }
}

describe('faults on one Redis', () => {
  test('stopped and restarted under load: each policy holds, nothing hangs, decisions recover', async (t) => {
    const { load, fallback } = loadOn('restart:');
    load.start();
    await sleep(300);
    await servers.kill(0);
    const downMs = performance.now();
    const sentAtDown = sent;
    await sleep(TIMEOUT_MS + MARGIN_MS);
    await probeFallback(fallback);
    await sleep(Math.max(0, downMs + OUTAGE_MS - performance.now()));
    const sentWhileDown = sent - sentAtDown;
    await servers.restart(0);
    const backMs = performance.now();
    await sleep(1200);
    await load.stop(TIMEOUT_MS + 2000);
    checkPolicies(load, downMs + TIMEOUT_MS + MARGIN_MS, backMs);
    assert.ok(
      sentWhileDown < 60,
      `${sentWhileDown} scripts sent while Redis was down (about ${load.since('open', downMs, backMs).length * 4} decisions)`,
    );
    checkSettledInTime(load);
    t.diagnostic(`${sentWhileDown} scripts sent while down, ${load.samples.length} decisions`);
    checkRecovered(load, backMs, (m) => t.diagnostic(m));
  });

  test('accepts connections but never answers (SIGSTOP), then resumes (SIGCONT)', async (t) => {
    const { load, fallback } = loadOn('hang:');
    load.start();
    await sleep(300);
    servers.signal(0, 'SIGSTOP');
    const hungMs = performance.now();
    const sentAtHang = sent;
    await sleep(TIMEOUT_MS + MARGIN_MS);
    await probeFallback(fallback);
    await sleep(Math.max(0, hungMs + OUTAGE_MS - performance.now()));
    const sentWhileHung = sent - sentAtHang;
    servers.signal(0, 'SIGCONT');
    const backMs = performance.now();
    await sleep(1200);
    await load.stop(TIMEOUT_MS + 2000);
    checkPolicies(load, hungMs + TIMEOUT_MS + MARGIN_MS, backMs);
    // Those sent before the first timeout opened the circuit, then one probe per interval.
    assert.ok(sentWhileHung < 200, `${sentWhileHung} scripts sent to the hung Redis`);
    checkSettledInTime(load);
    t.diagnostic(`${sentWhileHung} scripts sent while hung, ${load.samples.length} decisions`);
    checkRecovered(load, backMs, (m) => t.diagnostic(m));
  });
});
