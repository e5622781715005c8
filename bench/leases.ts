/**
 * Quota leases against per-request decisions on one Redis: N nodes (1, 3, 8) on one key, each node
 * a Limiter on its own RedisStore with its own connection, in this process, under open-loop load
 * at 1.2x the policy's rate (so the limit binds and over-admission can show), steady (equal demand)
 * and skewed (one node sends 80%). Policy: a token bucket of 10,000 with 10,000/s (windowMs 1 s).
 *
 * The key starts drained. For each run it prints: Redis scripts per admitted request (EVALSHA +
 * EVAL from INFO commandstats, census beats included), over-admission (the most admitted in any
 * 1 s window after the first second, above the limit per window, as % of it), and each node's
 * share of what was admitted against its share of the demand. Per-request runs are the peers,
 * measured the same way (their over-admission is the measurement's own noise: admissions are
 * timed when the answer arrives here, the bucket runs on Redis's clock). The curve (maxOutstandingShare vs
 * scripts per admitted request vs over-admission, for 1, 3 and 8 nodes) is written as an SVG.
 * Nothing is asserted.
 *
 *   node --conditions=floodgate-source --import tsx bench/leases.ts [--seconds 5] [--svg docs/images/leases-curve.svg]
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { Limiter, tokenBucket } from 'floodgate';
import { LeasedStore, RedisStore, ioredisAdapter } from 'floodgate/redis';
import { startRedis } from './gateway/processes.js';
import { leasesCurveSvg, type CurveLine } from './leases-chart.js';
import { runVirtual, type VirtualResult } from './leases-virtual.js';

const { values: args } = parseArgs({
  options: {
    seconds: { type: 'string', default: '5' },
    svg: { type: 'string', default: 'docs/images/leases-curve.svg' },
  },
});
const SECONDS = Number(args.seconds);
const RATE = 10_000;
const policy = tokenBucket({ capacity: RATE, refillPerSecond: RATE });
const OVERLOAD = 1.2;
const WARMUP_MS = 1000;

interface Run {
  readonly nodes: number;
  /** Undefined: per-request decisions. */
  readonly share: number | undefined;
  readonly skewed: boolean;
}

interface Result extends Run {
  readonly admitted: number;
  readonly scriptsPerAdmitted: number;
  /** Redis CPU inside the scripts (commandstats usec) per admitted request, in µs. */
  readonly redisUsPerAdmitted: number;
  readonly overPercent: number;
  /** Per node: share of admitted ÷ share of demand, after the warm-up. */
  readonly fairness: readonly number[];
  /** Decisions made by the store's failure policy (Redis did not answer in time): should be 0. */
  readonly notByRedis: number;
}

/** demandOf returns each node's share of the demand: equal, or 80% on node 0 and the rest split. */
function demandOf(nodes: number, skewed: boolean): number[] {
  if (!skewed || nodes === 1) return Array(nodes).fill(1 / nodes) as number[];
  return [0.8, ...(Array(nodes - 1).fill(0.2 / (nodes - 1)) as number[])];
}

/** scripts returns the EVALSHA + EVAL calls Redis has run, and the µs of Redis CPU they took. */
async function scripts(client: Redis): Promise<{ calls: number; usec: number }> {
  const info = await client.info('commandstats');
  let calls = 0;
  let usec = 0;
  for (const m of info.matchAll(/cmdstat_(?:evalsha|eval):calls=(\d+),usec=(\d+)/g)) {
    calls += Number(m[1]);
    usec += Number(m[2]);
  }
  return { calls, usec };
}

/**
 * overPercent returns the most admissions at `times` (ms, sorted) in any window of the policy's
 * length (1 s) lying within [fromMs, toMs], above the limit per window, in % of it. The bucket
 * starts drained, so an exact limiter admits at most the rate x 1 s in any such window.
 * Admissions answered after the load stopped (a backlog) are left out, as is the first second.
 */
function overPercent(times: readonly number[], fromMs: number, toMs: number): number {
  const windowMs = policy.windowMs!;
  const inside = times.filter((t) => t >= fromMs && t <= toMs);
  let best = 0;
  let first = 0;
  for (let last = 0; last < inside.length; last++) {
    while (inside[last]! - inside[first]! >= windowMs) first++;
    best = Math.max(best, last - first + 1);
  }
  return (Math.max(0, best - policy.limit) / policy.limit) * 100;
}

async function runOnce(port: number, admin: Redis, run: Run, keyTag: string): Promise<Result> {
  const demand = demandOf(run.nodes, run.skewed);
  const clients = demand.map(() => new Redis({ port, host: '127.0.0.1' }));
  const leased: LeasedStore[] = [];
  const limiters = clients.map((client) => {
    // A fixed, generous deadline: Redis decides every request however loaded the machine (the
    // adaptive default would hand slow answers to the local fallback, which is not what is measured).
    const redis = new RedisStore({ adapter: ioredisAdapter(client), prefix: `bench:${keyTag}:`, timeoutMs: 5000 });
    if (run.share === undefined) return new Limiter({ policy, store: redis });
    const store = new LeasedStore({ store: redis, maxOutstandingShare: run.share });
    leased.push(store);
    return new Limiter({ policy, store });
  });
  await Promise.all(clients.map((c) => c.ping()));
  // Drained first, so that the limit binds from the start and every window can be compared with it.
  await new Limiter({
    policy,
    store: new RedisStore({ adapter: ioredisAdapter(admin), prefix: `bench:${keyTag}:` }),
  }).consume('shared', { cost: policy.limit });
  const before = await scripts(admin);
  const times: number[] = [];
  const admittedBy = demand.map(() => 0);
  const sentBy = demand.map(() => 0);
  const startMs = performance.now();
  const endMs = startMs + SECONDS * 1000;
  const pending: Promise<unknown>[] = [];
  let notByRedis = 0;
  while (performance.now() < endMs) {
    const elapsedMs = performance.now() - startMs;
    for (let i = 0; i < demand.length; i++) {
      const due = Math.floor((elapsedMs * RATE * OVERLOAD * demand[i]!) / 1000) - sentBy[i]!;
      for (let j = 0; j < due; j++) {
        sentBy[i]!++;
        const node = i;
        const sentAtMs = performance.now();
        pending.push(
          limiters[i]!.consume('shared').then((d) => {
            if (d.reason !== 'ok' && d.reason !== 'limit') notByRedis++;
            if (!d.allowed) return;
            const atMs = performance.now();
            times.push(atMs);
            if (sentAtMs - startMs >= WARMUP_MS && atMs <= endMs) admittedBy[node]!++;
          }),
        );
      }
    }
    if (pending.length > 5000) await Promise.all(pending.splice(0));
    await sleep(1);
  }
  await Promise.all(pending);
  const after = await scripts(admin);
  const used = after.calls - before.calls;
  await Promise.all(leased.map((s) => s.close()));
  for (const c of clients) c.disconnect();
  times.sort((a, b) => a - b);
  const total = admittedBy.reduce((a, b) => a + b, 0);
  return {
    ...run,
    admitted: times.length,
    scriptsPerAdmitted: used / Math.max(1, times.length),
    redisUsPerAdmitted: (after.usec - before.usec) / Math.max(1, times.length),
    overPercent: overPercent(times, startMs + WARMUP_MS, endMs),
    fairness: admittedBy.map((a, i) => a / Math.max(1, total) / demand[i]!),
    notByRedis,
  };
}

/**
 * shareTarget returns the verdict on issue 25's fairness target for the leased runs of 8 skewed
 * nodes in `runs`: each node's admitted share within 5% of its demand-proportional share.
 */
function shareTarget(
  where: string,
  runs: readonly { nodes: number; skewed: boolean; share: number | undefined; fairness: readonly number[] }[],
): string {
  const skewed = runs.filter((r) => r.nodes === 8 && r.skewed && r.share !== undefined);
  const worst = Math.max(...skewed.flatMap((r) => r.fairness.map((f) => Math.abs(f - 1))));
  const verdict = worst <= 0.05 ? 'met' : 'not met';
  return `${where}, 8 skewed nodes on leases: each node's share of what was admitted within ${(worst * 100).toFixed(1)}% of its share of the demand (target 5%: ${verdict})`;
}

function line(r: Result): string {
  const mode = r.share === undefined ? 'per-request' : `lease ${r.share}`;
  const fair = r.fairness.map((f) => f.toFixed(3)).join(' ');
  return `${String(r.nodes).padStart(2)} nodes ${r.skewed ? 'skewed' : 'steady'} ${mode.padEnd(12)} admitted ${String(r.admitted).padStart(6)}  scripts/admitted ${r.scriptsPerAdmitted.toFixed(4)}  Redis µs/admitted ${r.redisUsPerAdmitted.toFixed(2)}  over ${r.overPercent.toFixed(2)}% of the limit  share/fair: ${fair}${r.notByRedis > 0 ? `  (${r.notByRedis} by the failure policy)` : ''}`;
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'floodgate-leases-'));
  const server = await startRedis(dir, undefined);
  if (server === undefined) throw new Error('redis-server is not installed');
  const admin = new Redis({ port: server.port, host: '127.0.0.1' });
  console.log(
    `load average ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}; ${SECONDS} s per run, demand ${OVERLOAD}x a bucket of ${RATE}/s`,
  );
  const shares = [0.005, 0.01, 0.02, 0.05, 0.1];
  console.log('-- manual clock, shared state in process, 1 ms one-way delay (the algorithm, exact timing) --');
  const virtual: VirtualResult[] = [];
  for (const nodes of [1, 3, 8]) {
    for (const share of [undefined, ...shares])
      virtual.push(await runVirtual({ nodes, share, skewed: false }, SECONDS, OVERLOAD));
    virtual.push(await runVirtual({ nodes, share: 0.02, skewed: true }, SECONDS, OVERLOAD));
  }
  for (const r of virtual) {
    const mode = r.share === undefined ? 'per-request' : `lease ${r.share}`;
    console.log(
      `${String(r.nodes).padStart(2)} nodes ${r.skewed ? 'skewed' : 'steady'} ${mode.padEnd(12)} admitted ${String(r.admitted).padStart(6)}  calls/admitted ${r.callsPerAdmitted.toFixed(4)}  over ${r.overPercent.toFixed(2)}% of the limit  share/fair: ${r.fairness.map((f) => f.toFixed(3)).join(' ')}`,
    );
  }
  console.log(shareTarget('manual clock', virtual));
  console.log(
    `-- real Redis, nodes in this process (load average ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}) --`,
  );
  const results: Result[] = [];
  let tag = 0;
  for (const nodes of [1, 3, 8]) {
    for (const share of [undefined, ...shares]) {
      const r = await runOnce(server.port, admin, { nodes, share, skewed: false }, String(tag++));
      results.push(r);
      console.log(line(r));
    }
    for (const share of [undefined, 0.02]) {
      const r = await runOnce(server.port, admin, { nodes, share, skewed: true }, String(tag++));
      results.push(r);
      console.log(line(r));
    }
  }
  console.log(shareTarget('real Redis', results));
  // The picture is the manual clock's: the algorithm's round trips and over-admission, which the
  // machine's load does not move (the real runs are printed beside it).
  const lines: CurveLine[] = [1, 3, 8].map((nodes) => ({
    label: `${nodes} node${nodes === 1 ? '' : 's'}`,
    perRequest: virtual.find((r) => r.nodes === nodes && r.share === undefined)!.callsPerAdmitted,
    points: virtual
      .filter((r) => r.nodes === nodes && r.share !== undefined && !r.skewed)
      .map((r) => ({ share: r.share!, scriptsPerAdmitted: r.callsPerAdmitted, overPercent: r.overPercent })),
  }));
  await writeFile(
    args.svg,
    leasesCurveSvg(
      lines,
      `Leases: calls to the shared state per admitted request vs over-admission (${OVERLOAD}x load)`,
    ),
  );
  console.log(
    `wrote ${args.svg}; load average ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );
  admin.disconnect();
  server.child.kill('SIGKILL');
  await rm(dir, { recursive: true, force: true });
}

await main();
