/**
 * One side of the chaos bench, in its own process: an open loop of decisions at a fixed rate
 * through one library, whatever happens to them, until the parent writes `stop` on stdin. Then it
 * waits up to 5 s for the decisions still out, and prints one JSON line (see {@link SideRecords}).
 * Times are epoch ms (`performance.timeOrigin + performance.now()`), so the parent can line them
 * up with the faults it caused.
 *
 *   node --conditions=floodgate-source --import tsx bench/chaos/side.ts '{"side":"floodgate","target":{"cluster":false,"ports":[1234]},"perSecond":2000,"keys":100}'
 */
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { ready, sideOf, type SideName, type Target } from './sides.js';

/** SideArgs is what the parent passes as the one argument, in JSON. */
export interface SideArgs {
  readonly side: SideName;
  readonly target: Target;
  readonly perSecond: number;
  readonly keys: number;
}

/**
 * SideRecords is what a side prints: per decision, when it was asked (ms after `baseEpochMs`), its
 * latency in ms, its outcome (REDIS, DEGRADED, ERROR) and its key's index; the asked times of the
 * decisions that never settled; tallies of the reasons; when (ms after `baseEpochMs`) and by how
 * much the loop's timer fired more than 5 ms late (an event loop blocked that long delays every
 * answer, whichever library gives it).
 */
export interface SideRecords {
  readonly side: SideName;
  readonly baseEpochMs: number;
  readonly askedMs: number[];
  readonly latencyMs: number[];
  readonly outcome: number[];
  readonly key: number[];
  readonly unsettledAskedMs: number[];
  readonly reasons: Record<string, number>;
  readonly lateAtMs: number[];
  readonly lateByMs: number[];
}

const TICK_MS = 5;
const SETTLE_MS = 5000;

const args = JSON.parse(process.argv[2] ?? '{}') as SideArgs;
const side = sideOf(args.side, args.target);
const baseEpochMs = performance.timeOrigin;
const records: SideRecords = {
  side: args.side,
  baseEpochMs,
  askedMs: [],
  latencyMs: [],
  outcome: [],
  key: [],
  unsettledAskedMs: [],
  reasons: {},
  lateAtMs: [],
  lateByMs: [],
};
const pending = new Map<number, number>(); // id -> asked (performance.now())
let issued = 0;

function issue(): void {
  const id = issued++;
  const key = id % args.keys;
  const askedMs = performance.now();
  pending.set(id, askedMs);
  void side.decide(`k${key}`).then((answer) => {
    pending.delete(id);
    records.askedMs.push(Math.round(askedMs * 100) / 100);
    records.latencyMs.push(Math.round((performance.now() - askedMs) * 100) / 100);
    records.outcome.push(answer.outcome);
    records.key.push(key);
    records.reasons[answer.reason] = (records.reasons[answer.reason] ?? 0) + 1;
  });
}

/** Issues every decision due by now (the rate holds even when a tick comes late), and notes how late. */
function openLoop(): NodeJS.Timeout {
  const startedMs = performance.now();
  let lastTickMs = startedMs;
  return setInterval(() => {
    const now = performance.now();
    const lateMs = now - lastTickMs - TICK_MS;
    if (lateMs > 5) {
      records.lateAtMs.push(Math.round(now));
      records.lateByMs.push(Math.round(lateMs));
    }
    lastTickMs = now;
    const due = Math.floor(((now - startedMs) * args.perSecond) / 1000);
    while (issued < due) issue();
  }, TICK_MS);
}

async function settle(): Promise<void> {
  const deadline = performance.now() + SETTLE_MS;
  while (pending.size > 0 && performance.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
  for (const askedMs of pending.values()) records.unsettledAskedMs.push(Math.round(askedMs * 100) / 100);
}

await ready(side.client);
await side.decide('warm-up');
process.stdout.write('ready\n');
const timer = openLoop();
const lines = createInterface({ input: process.stdin });
for await (const line of lines) if (line.trim() === 'stop') break;
clearInterval(timer);
await settle();
side.client.disconnect();
process.stdout.write(JSON.stringify(records) + '\n', () => process.exit(0));
