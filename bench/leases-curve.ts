/**
 * The lease curve at ordinary limits: Redis scripts per admitted request against over-admission,
 * for limits of 50/s to 10,000/s, 1, 3 and 8 nodes, and maxOutstandingShare 0.01 to 0.2, under a
 * token bucket (capacity one second of its rate) and a fixed window of 1 s.
 *
 * Each run is the deterministic fleet of bench/leases-virtual.ts: a manual clock, each node a
 * LeasedTable over one MemoryLeaseSource (the shared state, run by the same ledger as the Redis
 * lease script, which a differential test keeps identical) with a 1 ms one-way delay; every call to
 * the shared state (ask, return, or per-request decision) stands for one Redis script. The nodes
 * share 1.5x the limit equally, for `--seconds` of the clock, the key drained first. Figures:
 * - scripts per admitted request;
 * - over-admission measured, as % of the limit: under the bucket, the most admitted in any 1 s
 *   span from the second second on, above the limit (the per-request peer, exact, measured the same
 *   way, shows what the bucket itself lets through: its refill is continuous, so a span can hold a
 *   little more than the limit); under the fixed window, the most admitted in one window above
 *   its limit (always 0: a lease ends with the window that counted it);
 * - the bound: what can be admitted above the policy over any span, as % of the limit
 *   (`leaseOverAdmission`: the share's units for a bucket, 0 for a fixed window).
 * The per-request peer makes one script per request, refused ones included (1.5 per admitted
 * request here). Nothing is asserted; the figures do not depend on the machine.
 *
 * With `--redis`, the issue's cases instead run on a real redis-server the run starts: 3 nodes (each
 * a Limiter on its own RedisStore and connection, in this process) offered 1.5x a token bucket of
 * 200/s and of 2,000/s, per-request and leased at shares 0.02, 0.05 and 0.1, for `--seconds` each;
 * scripts are Redis's own count (EVALSHA + EVAL in INFO commandstats), over-admission measured as
 * above on this process's clock (so the machine's load shows in it; the per-request peer shows how much).
 *
 *   node --conditions=floodgate-source --import tsx bench/leases-curve.ts [--seconds 10] [--redis]
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { Limiter, fixedWindow, leaseOverAdmission, tokenBucket, type Algorithm } from 'floodgate';
import { LeasedStore, RedisStore, ioredisAdapter } from 'floodgate/redis';
import { drive, makeFleet, type Admission } from '../packages/floodgate/test/leases/fleet.js';
import { startRedis } from './gateway/processes.js';

const { values: args } = parseArgs({
  options: { seconds: { type: 'string', default: '10' }, redis: { type: 'boolean', default: false } },
});
const SECONDS = Number(args.seconds);
const LIMITS = [50, 200, 1000, 2000, 10_000];
const NODES = [1, 3, 8];
const SHARES = [0.01, 0.02, 0.05, 0.1, 0.2];
const OFFERED = 1.5;

/** CurveRun is one setting's figures. */
interface CurveRun {
  readonly scriptsPerAdmitted: number;
  readonly overPercent: number;
  readonly boundPercent: number;
}

async function run(policy: Algorithm, window: boolean, nodes: number, share: number | undefined): Promise<CurveRun> {
  const fleet = makeFleet(policy, nodes, { maxOutstandingShare: share ?? 0.02 });
  const state = fleet.source.stateOf('shared');
  policy.consume(state.cells, 0, fleet.clock.now(), policy.limit);
  const perMs = Array<number>(nodes).fill((OFFERED * policy.limit) / 1000 / nodes);
  let out: readonly Admission[];
  let scripts: number;
  if (share === undefined) {
    // Every node sends every request to the shared state's own table: one script each.
    const direct = fleet.source.direct();
    const perRequest = { ...fleet, tables: fleet.tables.map(() => direct) } as unknown as typeof fleet;
    out = await drive(perRequest, 'shared', perMs, SECONDS * 1000);
    scripts = out.length;
  } else {
    out = await drive(fleet, 'shared', perMs, SECONDS * 1000);
    scripts = fleet.tables.reduce((n, t) => n + t.counts.asks + t.counts.returns + t.counts.direct, 0);
  }
  const admitted = out.filter((a) => a.decision.allowed).length;
  const over = window ? overWindow(out, policy.limit) : mostInOneSecond(out) - policy.limit;
  return {
    scriptsPerAdmitted: scripts / admitted,
    overPercent: (100 * over) / policy.limit,
    boundPercent:
      share === undefined ? 0 : (100 * leaseOverAdmission(policy, { maxOutstandingShare: share })) / policy.limit,
  };
}

/** The most admitted within any 1 s span that starts a second or more after the first admission. */
function mostInOneSecond(out: readonly Admission[]): number {
  return mostInOneSecondOf(
    out
      .filter((a) => a.decision.allowed)
      .map((a) => a.atMs)
      .sort((x, y) => x - y),
  );
}

/** mostInOneSecondOf is {@link mostInOneSecond} of admission times (ms, sorted). */
function mostInOneSecondOf(times: readonly number[]): number {
  const fromMs = times[0]! + 1000;
  let best = 0;
  for (let i = 0, j = 0; j < times.length; j++) {
    while (times[j]! - times[i]! >= 1000) i++;
    if (times[i]! >= fromMs) best = Math.max(best, j - i + 1);
  }
  return best;
}

/** The most admitted in one window of the fixed window above its limit. */
function overWindow(out: readonly Admission[], limit: number): number {
  const windows = new Map<number, number>();
  for (const a of out) {
    if (!a.decision.allowed) continue;
    const w = Math.floor(a.atMs / 1000);
    windows.set(w, (windows.get(w) ?? 0) + a.cost);
  }
  return Math.max(0, ...[...windows.values()].map((n) => n - limit));
}

const cell = (r: CurveRun): string =>
  `${r.scriptsPerAdmitted.toFixed(r.scriptsPerAdmitted < 0.1 ? 3 : 2)} (${r.overPercent.toFixed(1)}%)`;

/** The virtual fleet's tables, for every limit, node count and share, under both policies. */
async function curve(): Promise<void> {
  for (const [name, window, make] of [
    ['token bucket', false, (limit: number) => tokenBucket({ capacity: limit, refillPerSecond: limit })],
    ['fixed window', true, (limit: number) => fixedWindow({ limit, windowMs: 1000 })],
  ] as const) {
    console.log(
      `\n${name}, offered ${OFFERED}x the limit, ${SECONDS} s: scripts per admitted request (over-admission measured)\n`,
    );
    console.log(`| limit/s | nodes | per-request | ${SHARES.map((s) => `share ${s}`).join(' | ')} |`);
    console.log(`|---|---|---|${SHARES.map(() => '---').join('|')}|`);
    for (const limit of LIMITS) {
      let bounds: string[] = [];
      for (const nodes of NODES) {
        const runs: CurveRun[] = [];
        for (const share of [undefined, ...SHARES]) runs.push(await run(make(limit), window, nodes, share));
        bounds = runs.slice(1).map((r) => `${r.boundPercent.toFixed(1)}%`);
        console.log(`| ${limit} | ${nodes} | ${runs.map(cell).join(' | ')} |`);
      }
      console.log(`| ${limit} | bound | 0% | ${bounds.join(' | ')} |`);
    }
  }
}

/** scriptCalls returns how many EVALSHA and EVAL calls Redis has run. */
async function scriptCalls(admin: Redis): Promise<number> {
  const info = await admin.info('commandstats');
  let calls = 0;
  for (const m of info.matchAll(/cmdstat_(?:evalsha|eval):calls=(\d+)/g)) calls += Number(m[1]);
  return calls;
}

/** One case on the real Redis: `nodes` nodes offered 1.5x a bucket of `limit`/s, leased at `share` (undefined: per-request). */
async function onRedis(
  port: number,
  admin: Redis,
  limit: number,
  nodes: number,
  share: number | undefined,
  tag: string,
) {
  const policy = tokenBucket({ capacity: limit, refillPerSecond: limit });
  const clients = Array.from({ length: nodes }, () => new Redis({ port, host: '127.0.0.1' }));
  const leased: LeasedStore[] = [];
  const limiters = clients.map((client) => {
    // A generous fixed deadline: Redis decides every request, however loaded the machine.
    const redis = new RedisStore({ adapter: ioredisAdapter(client), prefix: `curve:${tag}:`, timeoutMs: 5000 });
    if (share === undefined) return new Limiter({ policy, store: redis });
    const store = new LeasedStore({ store: redis, maxOutstandingShare: share });
    leased.push(store);
    return new Limiter({ policy, store });
  });
  await Promise.all(clients.map((c) => c.ping()));
  const drain = new RedisStore({ adapter: ioredisAdapter(admin), prefix: `curve:${tag}:` });
  await new Limiter({ policy, store: drain }).consume('shared', { cost: limit });
  const before = await scriptCalls(admin);
  const times: number[] = [];
  const sent = Array<number>(nodes).fill(0);
  const pending: Promise<unknown>[] = [];
  const startMs = performance.now();
  while (performance.now() - startMs < SECONDS * 1000) {
    const due = Math.floor(((performance.now() - startMs) * OFFERED * limit) / 1000 / nodes);
    for (let i = 0; i < nodes; i++) {
      for (; sent[i]! < due; sent[i]!++) {
        pending.push(
          limiters[i]!.consume('shared').then((d) => {
            if (d.allowed) times.push(performance.now());
          }),
        );
      }
    }
    if (pending.length > 5000) await Promise.all(pending.splice(0));
    await sleep(1);
  }
  await Promise.all(pending);
  const scripts = (await scriptCalls(admin)) - before;
  await Promise.all(leased.map((s) => s.close()));
  for (const c of clients) c.disconnect();
  times.sort((a, b) => a - b);
  const over = (100 * (mostInOneSecondOf(times) - limit)) / limit;
  return { admitted: times.length, scriptsPerAdmitted: scripts / times.length, overPercent: over };
}

async function realRedis(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'floodgate-curve-'));
  const server = await startRedis(dir, undefined);
  if (server === undefined) throw new Error('redis-server is not installed');
  const admin = new Redis({ port: server.port, host: '127.0.0.1' });
  const load = (): string =>
    loadavg()
      .map((l) => l.toFixed(2))
      .join(' ');
  console.log(
    `real Redis, 3 nodes in this process, ${OFFERED}x a token bucket, ${SECONDS} s each; load average ${load()}`,
  );
  let tag = 0;
  for (const limit of [200, 2000]) {
    for (const share of [undefined, 0.02, 0.05, 0.1]) {
      const r = await onRedis(server.port, admin, limit, 3, share, String(tag++));
      console.log(
        `${limit}/s ${share === undefined ? 'per-request' : `share ${share}`}: admitted ${r.admitted}, scripts/admitted ${r.scriptsPerAdmitted.toFixed(3)}, over ${r.overPercent.toFixed(1)}%`,
      );
    }
  }
  console.log(`load average ${load()}`);
  admin.disconnect();
  server.child.kill('SIGKILL');
  await rm(dir, { recursive: true, force: true });
}

if (args.redis) await realRedis();
else await curve();
