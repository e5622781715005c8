/**
 * What a request costs a process that holds quota lease units for its key, against a memory-store
 * decision: CPU time per decision of the library's multi-limit decision (`decideAll`, what the
 * gateway and the HTTP gate call) on one hot key, three ways in alternating rounds in one process:
 *
 * - `memory`: a token bucket on the memory store (synchronous, no promise);
 * - `leased`: the same bucket from a {@link LeasedTable} that holds units (a MemoryLeaseSource
 *   stands for Redis: it is asked a few times a second, for renewals, as Redis would be);
 * - `leased, awaited`: the same, each answer awaited as a caller would await a promise.
 *
 * The bucket never refuses (1,000,000 with 1,000,000/s). Figures are the median of the rounds, in
 * ns of CPU (user + system) per decision, and as ratios to `memory`. Nothing is asserted.
 *
 *   node --conditions=floodgate-source --import tsx bench/leases-spend.ts [--decisions 200000] [--rounds 5]
 */
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import {
  LeasedTable,
  Limiter,
  MemoryLeaseSource,
  MemoryStore,
  decideAll,
  leaseSettingsOf,
  leaseTermsOf,
  systemClock,
  systemTimers,
  tokenBucket,
  type LimitEntry,
} from 'floodgate';

const { values } = parseArgs({
  options: { decisions: { type: 'string', default: '200000' }, rounds: { type: 'string', default: '5' } },
});
const DECISIONS = Number(values.decisions);
const ROUNDS = Number(values.rounds);

const policy = tokenBucket({ capacity: 1_000_000, refillPerSecond: 1_000_000 });
const settings = leaseSettingsOf({}, 'lease');
const terms = leaseTermsOf(policy, settings);
const source = new MemoryLeaseSource({ policy, terms, clock: systemClock });
const table = new LeasedTable({
  policy,
  source,
  direct: source.direct(),
  settings,
  terms,
  clock: systemClock,
  timers: systemTimers,
});
const memory: LimitEntry[] = [{ limiter: new Limiter({ policy, store: new MemoryStore() }), key: 'hot' }];
const leased: LimitEntry[] = [{ limiter: new Limiter({ policy, store: { bind: () => table } }), key: 'hot' }];

/** Runs `decide` DECISIONS times (awaiting a promise when one comes back) and returns ns of CPU per decision. */
async function measure(decide: () => unknown, awaitEach: boolean): Promise<number> {
  let refused = 0;
  const before = process.cpuUsage();
  for (let i = 0; i < DECISIONS; i++) {
    let answer = decide();
    if (awaitEach || answer instanceof Promise) answer = await answer;
    if (!(answer as { allowed: boolean }).allowed) refused++;
  }
  const used = process.cpuUsage(before);
  if (refused > 0) throw new Error(`${refused} refused: the bucket should admit every decision`);
  return ((used.user + used.system) * 1000) / DECISIONS;
}

const cells: [string, () => Promise<number>][] = [
  ['memory', () => measure(() => decideAll(memory), false)],
  ['leased', () => measure(() => decideAll(leased), false)],
  ['leased, awaited', () => measure(() => decideAll(leased), true)],
];
const figures = new Map<string, number[]>(cells.map(([name]) => [name, []]));
await measure(() => decideAll(leased), false); // the first grant, and V8's compilation
for (let round = 0; round < ROUNDS; round++) for (const [name, run] of cells) figures.get(name)!.push(await run());
await table.close();

const median = (xs: readonly number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const base = median(figures.get('memory')!);
console.log(
  `decideAll on one hot key, ${DECISIONS} decisions x ${ROUNDS} rounds; load average ${loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}`,
);
for (const [name, xs] of figures)
  console.log(
    `${name.padEnd(16)} ${median(xs).toFixed(0).padStart(6)} ns CPU/decision  ${(median(xs) / base).toFixed(2)}x memory`,
  );
console.log(`asks to the shared state: ${table.counts.asks}, returns: ${table.counts.returns}`);
