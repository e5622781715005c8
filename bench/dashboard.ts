/**
 * The dashboard's cost on the decision path: `node --conditions=floodgate-source --expose-gc --import tsx bench/dashboard.ts [--quick]`
 *
 * What the gateway does per rule decision besides deciding, with the dashboard off (the metrics
 * reporter alone) and on (metrics, plus the board's rates, nearest keys, over-limit sketch and
 * refusal ring), beside the decision itself (`consumeSync` on the memory store) for scale. One
 * stream for all: 10,000 keys, a Zipf-like spread, a fixed window that refuses the head of the
 * spread (the share is printed). Prints rates and ratios; asserts nothing.
 */
import { parseArgs } from 'node:util';
import { Limiter, fixedWindow, type Decision } from 'floodgate';
import { Board } from '../packages/server/src/dashboard/board.js';
import { LoopClock } from '../packages/server/src/dashboard/loop-clock.js';
import { mountDashboard } from '../packages/server/src/dashboard/mount.js';
import type { DecisionReporter, RuleOutcome } from '../packages/server/src/outcomes.js';
import type { RouteTable } from '../packages/server/src/gateway/routes.js';
import { GatewayMetrics } from '../packages/server/src/ops/metrics.js';
import { tokenDigest } from '../packages/server/src/process/admin.js';
import { mps, ratio, spread, table } from './support/format.js';
import { measureRate } from './support/timing.js';

const { values: flags } = parseArgs({ options: { quick: { type: 'boolean', default: false } } });
const TIMING =
  flags.quick === true ? { warmupMs: 200, rounds: 3, roundMs: 100 } : { warmupMs: 500, rounds: 5, roundMs: 250 };
const KEYS = 10_000;
const STREAM = 1 << 16;
/** The fixed window's limit: the head of the Zipf spread goes over it, the tail never does. */
const LIMIT = 150;

/** A stream of keys, the i-th most frequent key drawn about 1/i as often as the first (seeded, so every subject sees the same). */
function zipfKeys(): string[] {
  let seed = 42;
  const random = (): number => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
  const harmonic = Math.log(KEYS) + 0.5772;
  return Array.from(
    { length: STREAM },
    () => `api/per-ip/ip:10.0.${Math.min(KEYS - 1, Math.floor(Math.exp(random() * harmonic)) - 1)}`,
  );
}

/** Decisions of a fixed window over the stream, made once: the reporters see exactly these. */
function decisionsOf(keys: readonly string[]): Decision[] {
  const limiter = new Limiter({ policy: fixedWindow({ limit: LIMIT, windowMs: 3_600_000 }) });
  return keys.map((k) => limiter.consumeSync(k));
}

function outcomeOf(d: Decision): RuleOutcome {
  return !d.allowed ? 'limited' : d.remaining < d.limit * 0.1 ? 'near_limit' : 'admitted';
}

/** The reporting the gateway does per decision (decide.ts's `report`). */
function reporting(
  reporter: DecisionReporter,
  keys: readonly string[],
  decisions: readonly Decision[],
): (n: number) => number {
  let i = 0;
  return (n) => {
    let admitted = 0;
    for (let j = 0; j < n; j++, i = (i + 1) & (STREAM - 1)) {
      const d = decisions[i]!;
      const outcome = outcomeOf(d);
      reporter.outcome('api', 'per-ip', outcome);
      reporter.decided?.({ route: 'api', rule: 'per-ip', key: keys[i]!, outcome, decision: d, reason: d.reason });
      if (d.allowed) admitted++;
    }
    return admitted;
  };
}

async function main(): Promise<void> {
  const keys = zipfKeys();
  const decisions = decisionsOf(keys);
  const limitedShare = decisions.filter((d) => !d.allowed).length / decisions.length;
  const metrics = new GatewayMetrics();
  const mount = (board: Board): DecisionReporter =>
    mountDashboard({
      board,
      metrics,
      tokenDigest: tokenDigest('bench-token-0123456789abcdef'),
      settings: { enabled: true, keys: 'full' },
      storeKind: 'memory',
      table: () => ({ routes: [] }) as unknown as RouteTable,
      activeConfig: () => ({ file: 'bench', loadedAt: '', config: {} }),
      isReady: () => true,
    })!.reporter;
  // The gateway's board reads a LoopClock: one clock read per event-loop turn. A synchronous loop never ends its turn, so
  // the loop clock here is expired every 8 decisions (8 decisions a turn); the system clock reads twice per decision (the worst case).
  let expire: () => void = () => {};
  let calls = 0;
  const loopClock = new LoopClock(undefined, (e) => (expire = e));
  const everyEighth = { now: (): number => ((++calls & 7) === 0 && expire(), loopClock.now()) };
  const limiter = new Limiter({ policy: fixedWindow({ limit: LIMIT, windowMs: 3_600_000 }) });
  let k = 0;
  const subjects: [string, (n: number) => number][] = [
    [
      'decision alone (consumeSync, memory store)',
      (n) => {
        let admitted = 0;
        for (let j = 0; j < n; j++, k = (k + 1) & (STREAM - 1)) if (limiter.consumeSync(keys[k]!).allowed) admitted++;
        return admitted;
      },
    ],
    ['reporting, dashboard off (metrics)', reporting(metrics, keys, decisions)],
    ['reporting, dashboard on, system clock', reporting(mount(new Board()), keys, decisions)],
    [
      'reporting, dashboard on, loop clock (8 a turn)',
      reporting(mount(new Board({ clock: everyEighth })), keys, decisions),
    ],
  ];
  const rates: number[] = [];
  const rows: string[][] = [];
  for (const [name, run] of subjects) {
    const rate = await measureRate(run, TIMING);
    rates.push(rate.median);
    rows.push([
      name,
      mps(rate.median),
      spread(rate.min, rate.max, rate.median),
      `${(1e9 / rate.median).toFixed(0)} ns`,
    ]);
  }
  console.log(
    `Dashboard cost per rule decision: ${KEYS.toLocaleString('en')} keys (Zipf), ${(limitedShare * 100).toFixed(0)}% refused\n`,
  );
  console.log(table(['subject', 'per second', '±', 'per call'], rows, new Set([1, 2, 3])));
  const [decide, off, ...on] = rates as [number, number, number, number];
  console.log('');
  for (const [i, rate] of on.entries()) {
    const extraNs = 1e9 / rate - 1e9 / off;
    console.log(
      `${subjects[i + 2]![0]}: reporting ${ratio(off / rate)} the time of metrics alone, +${extraNs.toFixed(0)} ns per decision; decision + reporting ${ratio((1 / decide + 1 / rate) / (1 / decide + 1 / off))}`,
    );
  }
}

await main();
