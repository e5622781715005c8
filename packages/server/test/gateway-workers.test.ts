/**
 * `floodgate serve` with workers, on real processes: one listener served by two worker processes,
 * one limit for the host on the memory store, the host's metrics, reloads reaching every worker,
 * the admin API, a worker killed with SIGKILL and replaced, and SIGTERM draining them all.
 */
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startRedisServer } from '../../floodgate/test/support/redis-server.js';
import { floodgate } from './support/cli.js';
import { startGateway, type GatewayProcess } from './support/gateway-process.js';
import { metricValue } from './support/http.js';
import { startUpstream, type TestUpstream } from './support/upstream.js';

const TOKEN = 'workers-test-admin-token-0123456789';

function config(upstream: string, limit = 100, extraRoute = ''): string {
  return `listen: { host: 127.0.0.1, port: 8080 }
admin: { host: 127.0.0.1, port: 9090, tokenEnv: FG_WORKERS_TOKEN }
store: { type: memory }
workers: 2
routes:${extraRoute}
  - name: api
    upstream: ${upstream}
    rules:
      - name: whole
        policy: { algorithm: fixedWindow, limit: ${limit}, windowMs: 3600000 }
        key: { type: route }
`;
}

/** One GET on a fresh connection; the status, or 0 when the connection failed (a killed worker's). */
function get(url: string): Promise<number> {
  return new Promise((resolve) => {
    const req = request(url, { agent: false, headers: { connection: 'close' } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', () => resolve(0));
    req.end();
  });
}

/** `total` GETs, `concurrency` at a time, each on a fresh connection; `between` runs after each batch. */
async function burst(url: string, total: number, concurrency: number, between?: (batch: number) => Promise<void>) {
  const statuses: number[] = [];
  for (let b = 0; b * concurrency < total; b++) {
    statuses.push(
      ...(await Promise.all(Array.from({ length: Math.min(concurrency, total - b * concurrency) }, () => get(url)))),
    );
    await between?.(b);
  }
  return {
    ok: statuses.filter((s) => s === 200).length,
    limited: statuses.filter((s) => s === 429).length,
    failed: statuses.filter((s) => s === 0).length,
  };
}

async function admin(gw: GatewayProcess, path: string, method = 'GET'): Promise<{ status: number; body: string }> {
  const res = await fetch(gw.adminUrl(path), { method, headers: { authorization: `Bearer ${TOKEN}` } });
  return { status: res.status, body: await res.text() };
}

const env = { FG_WORKERS_TOKEN: TOKEN };

/**
 * Kills the first worker with SIGKILL and resolves once the primary has forked its replacement,
 * which is then still loading: the first workers' pids, and where the logs stood before the kill.
 */
async function killFirstWorker(gw: GatewayProcess): Promise<{ first: number[]; from: number }> {
  const first = gw.logs.filter((l) => l.msg === 'worker listening').map((l) => l.pid as number);
  const from = gw.logs.length;
  process.kill(first[0]!, 'SIGKILL');
  await gw.waitForLog('worker exited; starting another', from);
  return { first, from };
}

/** The first `msg` log line (from `from` on) of a worker whose pid is not among `old`. */
async function waitForNewWorker(gw: GatewayProcess, msg: string, from: number, old: readonly number[]) {
  for (;;) {
    const line = await gw.waitForLog(msg, from);
    if (!old.includes(line.pid as number)) return line;
    from = gw.logs.indexOf(line, from) + 1;
  }
}

describe('floodgate serve with 2 workers', { timeout: 300_000 }, () => {
  let upstream: TestUpstream;
  before(async () => {
    upstream = await startUpstream();
  });
  after(() => upstream.close());

  test('one limit for the host: 400 requests over 50 fresh connections admit exactly 100, every run', async () => {
    for (let run = 0; run < 3; run++) {
      const gw = await startGateway(config(upstream.origin), { env });
      try {
        const workers = gw.logs.filter((l) => l.msg === 'worker listening');
        assert.equal(new Set(workers.map((l) => l.pid)).size, 2, 'two worker processes');
        const r = await burst(gw.url('/x'), 400, 50);
        assert.deepEqual(r, { ok: 100, limited: 300, failed: 0 });
        // The host's metrics: every worker's decisions, summed by the primary.
        const metrics = await (await fetch(gw.adminUrl('/metrics'))).text();
        const decided = (outcome: string) =>
          metricValue(metrics, 'floodgate_decisions_total', { route: 'api', rule: 'whole', outcome });
        assert.equal(decided('admitted') + decided('near_limit'), 100, metrics);
        assert.equal(decided('limited'), 300);
        assert.equal(metricValue(metrics, 'floodgate_workers'), 2);
        assert.equal(metricValue(metrics, 'floodgate_ready'), 1);
      } finally {
        assert.equal(await gw.stop(), 0);
      }
    }
  });

  test('a worker SIGKILLed mid-run is replaced and logged; the limit holds (never over, short at most the unit it held)', async () => {
    const gw = await startGateway(config(upstream.origin), { env });
    try {
      const first = gw.logs.filter((l) => l.msg === 'worker listening').map((l) => l.pid as number);
      let seenAfterKill = 0;
      const r = await burst(gw.url('/x'), 400, 25, async (batch) => {
        if (batch !== 1) return;
        process.kill(first[0]!, 'SIGKILL');
        seenAfterKill = gw.logs.length;
        await gw.waitForLog('worker exited; starting another', seenAfterKill - 1);
        // The replacement's readiness, not a first worker's that came late.
        await waitForNewWorker(gw, 'worker ready', seenAfterKill - 1, first);
      });
      const exited = gw.logs.find((l) => l.msg === 'worker exited; starting another');
      assert.equal(exited?.pid, first[0]);
      assert.equal(exited?.signal, 'SIGKILL');
      assert.ok(r.ok <= 100 && r.ok >= 99, JSON.stringify(r));
      const replacement = gw.logs.slice(seenAfterKill).find((l) => l.msg === 'worker listening');
      assert.ok(replacement !== undefined && !first.includes(replacement.pid as number), 'a new worker process');
      const metrics = await (await fetch(gw.adminUrl('/metrics'))).text();
      assert.equal(metricValue(metrics, 'floodgate_worker_restarts_total'), 1);
    } finally {
      assert.equal(await gw.stop(), 0);
    }
  });

  test('SIGTERM while a replacement worker is still starting stops it too, and the primary exits 0', async () => {
    const gw = await startGateway(config(upstream.origin), { env });
    try {
      const { from } = await killFirstWorker(gw);
      // The replacement is loading its modules: it cannot hear the primary yet.
      gw.child.kill('SIGTERM');
      assert.equal(await gw.stop(), 0, JSON.stringify(gw.logs.slice(from)));
      const after = gw.logs.slice(from);
      assert.ok(
        after.some((l) => l.msg === 'stopped' && l.pid === gw.child.pid),
        'the primary stopped in order',
      );
      // The replacement, had it come to listen, stopped in order too (it was told once it could hear).
      for (const started of after.filter((l) => l.msg === 'worker listening'))
        assert.ok(
          after.some((l) => l.msg === 'stopped' && l.pid === started.pid),
          `worker ${String(started.pid)} stopped`,
        );
      const shutdown = after.findIndex((l) => l.msg === 'shutting down every worker');
      assert.ok(
        shutdown >= 0 && !after.slice(shutdown).some((l) => l.msg === 'ready'),
        'no "ready" once shutting down',
      );
    } finally {
      await gw.stop();
    }
  });

  test('a reload asked while a replacement worker is still starting answers, and the replacement serves the new config', async () => {
    const gw = await startGateway(config(upstream.origin), { env });
    try {
      const { first, from } = await killFirstWorker(gw);
      const newRoute = `\n  - name: fresh\n    match: { path: /fresh }\n    upstream: ${upstream.origin}`;
      await gw.writeConfig(config(upstream.origin, 100, newRoute));
      // The replacement is loading its modules: a reload that waited for its answer would never end.
      const res = await fetch(gw.adminUrl('/admin/reload'), {
        method: 'POST',
        headers: { authorization: `Bearer ${TOKEN}` },
        signal: AbortSignal.timeout(30_000),
      });
      assert.equal(res.status, 200, await res.text());
      await waitForNewWorker(gw, 'worker ready', from, first);
      // Fresh connections spread over both workers: each serves the new route.
      assert.deepEqual(await burst(gw.url('/fresh'), 20, 10), { ok: 20, limited: 0, failed: 0 });
    } finally {
      assert.equal(await gw.stop(), 0);
    }
  });

  test('SIGHUP reloads every worker, keeping counts; the admin API reaches the shared limit; one dashboard lists every worker', async () => {
    const gw = await startGateway(config(upstream.origin, 10), { env });
    try {
      assert.deepEqual(await burst(gw.url('/x'), 20, 10), { ok: 10, limited: 10, failed: 0 });
      // A new route on every worker: 20 fresh connections spread over both, none answered 404.
      const newRoute = `\n  - name: fresh\n    match: { path: /fresh }\n    upstream: ${upstream.origin}`;
      const from = gw.logs.length;
      await gw.writeConfig(config(upstream.origin, 10, newRoute));
      gw.child.kill('SIGHUP');
      await gw.waitForLog('config reloaded', from);
      await new Promise((r) => setTimeout(r, 500));
      const reloaded = gw.logs.slice(from).filter((l) => l.msg === 'config reloaded');
      assert.ok(reloaded.length >= 2, 'each worker reloaded');
      assert.deepEqual(await burst(gw.url('/fresh'), 20, 10), { ok: 20, limited: 0, failed: 0 });
      // The unchanged rule kept its count across the reload, on every worker.
      assert.deepEqual(await burst(gw.url('/x'), 10, 10), { ok: 0, limited: 10, failed: 0 });
      // A reset through the host's admin port: the shared state is fresh for every worker.
      const reset = await admin(gw, '/admin/keys/reset?route=api&rule=whole&identity=route:api', 'POST');
      assert.equal(reset.status, 200, reset.body);
      assert.deepEqual(await burst(gw.url('/x'), 20, 10), { ok: 10, limited: 10, failed: 0 });
      // One dashboard for the host: whichever worker serves it lists every worker, a row each.
      let page = '';
      for (let i = 0; i < 50 && !page.includes('Gateway processes on this store (2)'); i++) {
        await new Promise((r) => setTimeout(r, 200));
        page = (await admin(gw, '/dashboard')).body;
      }
      assert.match(page, /Gateway processes on this store \(2\)/);
      // The admin API's reload reaches every worker too.
      const viaAdmin = await admin(gw, '/admin/reload', 'POST');
      assert.equal(viaAdmin.status, 200, viaAdmin.body);
    } finally {
      assert.equal(await gw.stop(), 0);
    }
  });

  test('SIGTERM drains every worker and the primary exits 0', async () => {
    const gw = await startGateway(config(upstream.origin), { env, args: ['--drain-ms', '300'] });
    const workers = gw.logs.filter((l) => l.msg === 'worker listening').map((l) => l.pid);
    const code = await gw.stop();
    assert.equal(
      code,
      0,
      `exit ${String(code)} (${String(gw.child.signalCode)}); logs:\n${gw.logs.map((l) => JSON.stringify(l)).join('\n')}`,
    );
    const stopped = gw.logs.filter((l) => l.msg === 'stopped').map((l) => l.pid);
    for (const pid of workers) assert.ok(stopped.includes(pid), `worker ${String(pid)} stopped`);
    for (const pid of workers) assert.throws(() => process.kill(pid as number, 0), 'the worker process is gone');
  });

  test('Ctrl-C (SIGINT) to the primary closes every worker without the drain period, exit 0', async () => {
    const gw = await startGateway(`${config(upstream.origin)}shutdown: { drainMs: 5000 }\n`, { env });
    const started = performance.now();
    gw.child.kill('SIGINT');
    const code = await gw.stop();
    assert.equal(code, 0);
    const tookMs = performance.now() - started;
    assert.ok(tookMs < 4_000, `stopped in ${tookMs.toFixed(0)} ms, not after the 5 s drain`);
  });

  test('a smooth policy on the memory store with workers: check and serve refuse it, with the fix', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'floodgate-workers-'));
    try {
      const smooth = (workers: number) => `store: { type: memory }
workers: ${workers}
routes:
  - name: paced
    upstream: ${upstream.origin}
    rules:
      - name: even
        mode: queue
        policy: { algorithm: smoothBursty, permitsPerSecond: 10 }
        key: { type: route }
        queue: { maxWaitMs: 1000 }
`;
      const file = join(dir, 'smooth.yaml');
      await writeFile(file, smooth(2));
      const check = await floodgate('check', file);
      assert.equal(check.code, 1);
      assert.match(check.stdout + check.stderr, /every worker would pace at the full rate/);
      assert.match(check.stdout + check.stderr, /use a Redis store .* or workers: 1/);
      await writeFile(file, smooth(1));
      assert.equal((await floodgate('check', file)).code, 0);
      const serve = await floodgate('serve', '--config', file, '--workers', '2', '--port', '0', '--admin-port', '0');
      assert.equal(serve.code, 1);
      assert.match(serve.stdout, /cannot run with --workers 2/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  test('a concurrency limit is divided among the workers: the host never sends the upstream more than it', async () => {
    const gw = await startGateway(
      `store: { type: memory }
workers: 2
routes:
  - name: held
    upstream: ${upstream.origin}
    concurrency: { limit: 4 }
`,
    );
    try {
      const before = upstream.received.length;
      // 12 at once on fresh connections: each worker lets 2 through (4 / 2) and sheds the rest.
      const answers = Array.from({ length: 12 }, (_, i) => get(gw.url(`/hold/${i}`)));
      await new Promise((r) => setTimeout(r, 1_000));
      const reached = upstream.received.length - before;
      const metrics = await (await fetch(gw.adminUrl('/metrics'))).text();
      upstream.release();
      const statuses = await Promise.all(answers);
      assert.ok(reached >= 2 && reached <= 4, `${reached} reached the upstream at once`);
      assert.equal(statuses.filter((s) => s === 200).length, reached);
      assert.equal(statuses.filter((s) => s === 503).length, 12 - reached);
      assert.equal(metricValue(metrics, 'floodgate_concurrency_limit', { scope: 'route:held' }), 4, metrics);
    } finally {
      assert.equal(await gw.stop(), 0);
    }
  });

  test('the quota service (RLQS) on the memory store with workers: serve refuses it, with the fix', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'floodgate-workers-rlqs-'));
    try {
      const descriptors = fileURLToPath(new URL('./ratelimit/fixtures/rlqs-shared.yaml', import.meta.url));
      const file = join(dir, 'rlqs.yaml');
      await writeFile(
        file,
        `store: { type: memory }\nworkers: 2\nrateLimitService: { grpc: { port: 0 }, descriptors: [${descriptors}] }\n`,
      );
      const serve = await floodgate('serve', '--config', file, '--admin-port', '0');
      assert.equal(serve.code, 1);
      assert.match(serve.stdout, /keeps its ledger in each process on the memory store/);
      assert.match(serve.stdout, /use a Redis store/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  test('on a Redis store, every worker decides on Redis: exact per request, and never over with leases', async () => {
    const redis = await startRedisServer();
    try {
      const yaml = (prefix: string, lease: string): string =>
        [
          `store: { type: redis, url: "redis://127.0.0.1:${redis.ports[0]}", prefix: "${prefix}", timeoutMs: 5000 }`,
          'workers: 2',
          'routes:',
          '  - name: api',
          `    upstream: ${upstream.origin}`,
          '    rules:',
          '      - name: whole',
          '        policy: { algorithm: fixedWindow, limit: 100, windowMs: 3600000 }',
          '        key: { type: route }',
          lease,
          '',
        ].join('\n');
      for (const [prefix, lease] of [
        ['plain:', ''],
        ['leased:', '        lease: {}'],
      ] as const) {
        const gw = await startGateway(yaml(prefix, lease), { env });
        try {
          // Until every worker's Redis answers, the local fallback decides (see docs/gateway-store.md):
          // the primary says ready once all of them have answered.
          await gw.waitForLog('ready');
          const r = await burst(gw.url('/x'), 400, 50);
          if (lease === '') assert.deepEqual(r, { ok: 100, limited: 300, failed: 0 }, prefix);
          else {
            // Redis leases never admit above a fixed window's limit (a lease ends with its window);
            // under contention the ledger's fair-share credit may refuse a few of its last units
            // (docs/leases.md), as with separate gateway processes.
            assert.ok(r.ok <= 100 && r.ok >= 90 && r.failed === 0, JSON.stringify(r));
          }
        } finally {
          assert.equal(await gw.stop(), 0);
        }
      }
    } finally {
      await redis.stop();
    }
  });
});
