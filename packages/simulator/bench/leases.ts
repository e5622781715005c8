/**
 * The cost of simulating a leased fleet, from the repository root:
 *
 *   node --conditions=floodgate-source --import tsx packages/simulator/bench/leases.ts [--rounds 3]
 *
 * Prints figures and asserts nothing. One token bucket of 10,000 with 10,000 a second under
 * 12,000 Poisson requests a second for 10 s (120,000 requests) on 3 nodes 2 ms from the store, as
 * a per-request lane (the synchronous distributed engine) and as a leased lane (every node a
 * LeasedTable on the manual clock, each arrival and each call an event, every promise settled
 * before time moves; the lane also runs its per-request peer on the same event loop). Medians of
 * the rounds, alternating, in CPU-µs per request of this process (steadier on a shared machine
 * than wall time), and their ratio.
 */
import { parseArgs } from 'node:util';
import { simulate } from '../src/index.js';

const { values } = parseArgs({ options: { rounds: { type: 'string', default: '3' } } });
const rounds = Math.max(1, Number(values.rounds));
const policy = { type: 'token-bucket', capacity: 10_000, refillPerSecond: 10_000 };
const traffic = [{ type: 'poisson', ratePerSecond: 12_000 }];
const cases = {
  'per-request lane': { nodes: 3, roundTripMs: 2 },
  'leased lane (with its peer)': { nodes: 3, roundTripMs: 2, lease: {} },
} as const;

const samples = new Map<string, number[]>(Object.keys(cases).map((name) => [name, []]));
for (let round = 0; round < rounds; round++) {
  for (const [name, distribution] of Object.entries(cases)) {
    const before = process.cpuUsage();
    const result = await simulate({ durationMs: 10_000, traffic, policies: [{ name, policy, distribution }] });
    const cpu = process.cpuUsage(before);
    samples.get(name)!.push((cpu.user + cpu.system) / result.arrivals.length);
  }
}
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]!;
const perRequest = median(samples.get('per-request lane')!);
for (const [name, xs] of samples)
  console.log(`${name}: ${median(xs).toFixed(2)} CPU-µs per request (${(median(xs) / perRequest).toFixed(2)}x)`);
