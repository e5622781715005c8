/**
 * The healthy path's cost, in its own process: floodgate at its defaults beside floodgate with a
 * fixed `timeoutMs: 1000`, on one healthy Redis, in alternating rounds of a closed loop (128
 * decisions in flight over 100 keys). Each round measures decisions per second and this process's
 * CPU time (user + system, which includes the client's own work) per decision. Prints one JSON line
 * of {@link CostRounds}.
 *
 *   node --conditions=floodgate-source --expose-gc --import tsx bench/chaos/cost.ts --port 1234
 */
import { performance } from 'node:perf_hooks';
import { caseArgs, numberArg, printResult, runCase } from '../support/child-io.js';
import { clientOf, floodgateSide, ready, type SideClient } from './sides.js';

/** CostRounds is each subject's rounds: decisions per second and CPU µs per decision. */
export type CostRounds = Record<'defaults' | 'fixed', Array<{ perSec: number; cpuUsPerDecision: number }>>;

const IN_FLIGHT = 128;
const ROUND_MS = 1000;
const ROUNDS = 9;

/** One round of a closed loop on `side`: decisions per second and CPU µs per decision. */
async function round(side: SideClient): Promise<{ perSec: number; cpuUsPerDecision: number }> {
  let count = 0;
  let stop = false;
  const lane = async (lane: number): Promise<void> => {
    for (let i = lane; !stop; i += IN_FLIGHT) {
      await side.decide(`k${i % 100}`);
      count++;
    }
  };
  global.gc?.();
  const cpu = process.cpuUsage();
  const startedMs = performance.now();
  const lanes = Array.from({ length: IN_FLIGHT }, (_, i) => lane(i));
  await new Promise((resolve) => setTimeout(resolve, ROUND_MS));
  stop = true;
  await Promise.all(lanes);
  const elapsedMs = performance.now() - startedMs;
  const used = process.cpuUsage(cpu);
  return { perSec: (count / elapsedMs) * 1000, cpuUsPerDecision: (used.user + used.system) / count };
}

runCase(async () => {
  const port = numberArg(caseArgs(['port']), 'port');
  const client = clientOf({ cluster: false, ports: [port] });
  await ready(client);
  const sides = {
    defaults: floodgateSide(client, 'cost-defaults:'),
    fixed: floodgateSide(client, 'cost-fixed:', { timeoutMs: 1000 }),
  };
  await round(sides.defaults); // warm-up, for the JIT and for the adaptive timeout's first samples
  await round(sides.fixed);
  const rounds: CostRounds = { defaults: [], fixed: [] };
  for (let i = 0; i < ROUNDS; i++) {
    // Alternate which goes first, so a drift on the machine favours neither.
    const order = i % 2 === 0 ? (['defaults', 'fixed'] as const) : (['fixed', 'defaults'] as const);
    for (const name of order) rounds[name].push(await round(sides[name]));
  }
  client.disconnect();
  printResult(rounds);
});
