/**
 * RLQS at the edges (#35): two `floodgate ratelimit` processes on one redis-server (started here,
 * no persistence), data planes that hold their assignments as Envoy's filter does
 * (packages/server/test/ratelimit/rlqs-fleet.ts), one bucket of 100 requests a second. It counts,
 * rather than times, so its figures do not depend on the machine's load:
 *
 * - join storms: `--storms` times (default 100), 20 clients join at once over the two replicas,
 *   half leave 1.2 s later, the rest 0.8 s after; the grants held summed every 10 ms, and the
 *   samples over the limit counted;
 * - fairness: a client that follows its assignment beside one that reports 10x its grant as
 *   allowed, for 10 s; the samples (every 10 ms, from 2 s on) where the first holds under 47;
 * - newcomers: `--newcomers` times (default 10), two clients of replica 0 hold everything and a
 *   third joins on replica 1; the time from its first report to its first grant above 0;
 * - ledger loss: four steady clients through a FLUSHALL, then redis-server killed and started
 *   again on its port; the samples over the limit in each phase.
 *
 *   node --conditions=floodgate-source --import tsx bench/rlqs-edges.ts [--storms 100] [--newcomers 10]
 */
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { startRedisServer } from '../packages/floodgate/test/support/redis-server.js';
import {
  EDGE_LIMIT,
  Fleet,
  FleetClient,
  sleep,
  type SampleCounts,
} from '../packages/server/test/ratelimit/rlqs-fleet.js';
import { joinStorms, ledgerFaults, ledgerLoss } from '../packages/server/test/ratelimit/rlqs-scenarios.js';
import { table } from './support/format.js';

const { values } = parseArgs({ options: { storms: { type: 'string' }, newcomers: { type: 'string' } } });
const STORMS = Number(values.storms ?? 100);
const NEWCOMERS = Number(values.newcomers ?? 10);

/** fairness runs the honest client beside the over-reporter for 10 s and counts the samples where it holds under 47 (from 2 s on). */
async function fairness(fleet: Fleet): Promise<{ samples: number; under: number; least: number }> {
  const honest = new FleetClient(fleet, 0, { wantPerSecond: 100 });
  const cheat = new FleetClient(fleet, 1, { wantPerSecond: 100, overReport: 10 });
  honest.start();
  cheat.start();
  await sleep(2000);
  let samples = 0;
  let under = 0;
  let least = Infinity;
  const until = performance.now() + 8000;
  while (performance.now() < until) {
    const held = honest.held(performance.now());
    samples++;
    if (held < 47) under++;
    least = Math.min(least, held);
    await sleep(10);
  }
  honest.close();
  cheat.close();
  await sleep(300);
  return { samples, under, least };
}

/** newcomers returns, per trial, the ms from a newcomer's first report to its first grant above 0 (Infinity: none within 5 s). */
async function newcomers(fleet: Fleet): Promise<number[]> {
  const waits: number[] = [];
  for (let trial = 0; trial < NEWCOMERS; trial++) {
    const holders = [0, 0].map(() => new FleetClient(fleet, 0, { wantPerSecond: 100 }));
    for (const c of holders) c.start();
    await sleep(2500);
    const newcomer = new FleetClient(fleet, 1, { wantPerSecond: 100 });
    newcomer.start();
    for (let waited = 0; newcomer.firstGrantAtMs === undefined && waited < 5000; waited += 10) await sleep(10);
    waits.push((newcomer.firstGrantAtMs ?? Infinity) - newcomer.firstReportAtMs!);
    for (const c of [...holders, newcomer]) c.close();
    await sleep(300);
  }
  return waits;
}

const overRow = (name: string, runs: string, c: SampleCounts): string[] => [
  name,
  runs,
  String(c.samples),
  String(c.over),
  String(c.maxSum),
];

const redis = await startRedisServer();
const fleet = await Fleet.start(redis.ports[0]!, 2);
try {
  const started = performance.now();
  const storms = await joinStorms(fleet, { storms: STORMS });
  const fair = await fairness(fleet);
  const waits = await newcomers(fleet);
  const loss = await ledgerLoss(fleet, ledgerFaults(redis));
  const sorted = [...waits].sort((a, b) => a - b);
  process.stdout.write(
    `RLQS at the edges: 2 replicas on one redis-server, one bucket of ${EDGE_LIMIT}/s, grants held summed every 10 ms; ${((performance.now() - started) / 1000).toFixed(0)} s\n\n`,
  );
  process.stdout.write(
    table(
      ['scenario', 'runs', 'samples', `over ${EDGE_LIMIT}`, 'largest sum'],
      [
        overRow('join storms of 20 (leaving in two waves)', String(STORMS), storms),
        overRow('ledger loss: steady before', '1', loss.counts.steady),
        overRow('ledger loss: FLUSHALL, then one TTL + 2 s', '1', loss.counts.flushall),
        overRow('ledger loss: redis-server restarted, then one TTL + 4 s', '1', loss.counts.restart),
      ],
      new Set([1, 2, 3, 4]),
    ) + '\n\n',
  );
  process.stdout.write(
    `fairness: the client following its assignment held under 47 in ${fair.under} of ${fair.samples} samples from 2 s on (least ${fair.least})\n`,
  );
  process.stdout.write(
    `newcomers: first grant above 0 after ${sorted.map((w) => w.toFixed(0)).join(', ')} ms (${NEWCOMERS} trials; reporting interval 1000 ms)\n`,
  );
  process.stdout.write(`grants held after the restart: ${loss.grantedAfter} of ${EDGE_LIMIT}\n`);
} finally {
  await fleet.stop();
  await redis.stop();
}
