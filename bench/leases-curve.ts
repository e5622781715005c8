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
 *   node --conditions=floodgate-source --import tsx bench/leases-curve.ts [--seconds 10]
 */
import { parseArgs } from 'node:util';
import { fixedWindow, leaseOverAdmission, tokenBucket, type Algorithm } from 'floodgate';
import { drive, makeFleet, type Admission } from '../packages/floodgate/test/leases/fleet.js';

const { values: args } = parseArgs({ options: { seconds: { type: 'string', default: '10' } } });
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
  const times = out
    .filter((a) => a.decision.allowed)
    .map((a) => a.atMs)
    .sort((x, y) => x - y);
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
