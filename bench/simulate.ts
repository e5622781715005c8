/**
 * The simulator benchmark: `node --conditions=floodgate-source --import tsx bench/simulate.ts [--quick]`
 *
 * How many simulated decisions a second the simulator makes on the memory store, beside the
 * floor under it: the same arrivals fed straight to `limiter.consumeSync` on a manual clock, in a
 * bare loop. Prints figures and ratios, asserts nothing. Target: at least 1,000,000 decisions a
 * second in refuse mode.
 *
 * - engine: one lane's run (`runLane`) over pre-generated arrivals, per policy, on one hot key and
 *   on 10,000 Zipf-spread keys.
 * - whole run: `simulate()` of a scenario with two lanes, from generating the traffic to the
 *   scores and chart series (decisions = arrivals x lanes).
 * - queueing engines (wait mode with acquire and timers, the shaping gate, the smooth limiter),
 *   which do more per request.
 *
 * Each figure is the median of several rounds, alternating subject and floor; ± is half the
 * spread of the rounds. `cpu` is the same rate per second of this process's CPU time, which a
 * busy shared machine disturbs less than wall time.
 */
import { parseArgs } from 'node:util';
import { Limiter, ManualClock, MemoryStore, type Algorithm } from 'floodgate';
import {
  buildAlgorithm,
  generateArrivals,
  parseScenario,
  runLane,
  simulate,
  type Arrivals,
  type LaneSpec,
  type PolicySpec,
} from 'floodgate-simulator';

const { values: flags } = parseArgs({ options: { quick: { type: 'boolean', default: false } } });
const ROUNDS = flags.quick === true ? 3 : 7;
const ARRIVALS = flags.quick === true ? 300_000 : 1_000_000;

interface Figure {
  /** Median decisions per second of wall time. */
  median: number;
  /** Half the spread of the rounds' wall-time rates. */
  spread: number;
  /** Median decisions per second of this process's CPU time (all its threads): steadier on a shared machine. */
  cpuMedian: number;
}

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[values.length >> 1]!;

/** Runs each subject `ROUNDS` times, alternately, and returns each one's median rates in decisions a second. */
async function measure(subjects: Array<() => Promise<number> | number>): Promise<Figure[]> {
  const rates: number[][] = subjects.map(() => []);
  const cpuRates: number[][] = subjects.map(() => []);
  for (let round = 0; round < ROUNDS + 1; round++) {
    for (const [i, subject] of subjects.entries()) {
      const started = performance.now();
      const cpu = process.cpuUsage();
      const decisions = await subject();
      const seconds = (performance.now() - started) / 1000;
      const used = process.cpuUsage(cpu);
      if (round === 0) continue; // the first round warms up
      rates[i]!.push(decisions / seconds);
      cpuRates[i]!.push(decisions / ((used.user + used.system) / 1e6));
    }
  }
  return rates.map((r, i) => ({
    median: median(r),
    spread: (Math.max(...r) - Math.min(...r)) / 2,
    cpuMedian: median(cpuRates[i]!),
  }));
}

/** The floor: the same arrivals straight into `consumeSync` on a manual clock, nothing recorded but a count. */
function bareLoop(algorithm: Algorithm, arrivals: Arrivals): number {
  const clock = new ManualClock(0);
  const limiter = new Limiter({
    policy: algorithm,
    store: new MemoryStore({ maxKeys: Math.max(1000, arrivals.keys.length) }),
    clock,
  });
  let admitted = 0;
  const options = { cost: 1 };
  for (let i = 0; i < arrivals.length; i++) {
    clock.set(arrivals.atMs[i]!);
    options.cost = arrivals.costs[i]!;
    if (limiter.consumeSync(arrivals.keys[arrivals.keyIds[i]!]!, options).allowed) admitted++;
  }
  return admitted;
}

const millions = (rate: number): string => `${(rate / 1e6).toFixed(2)} M/s`;
const shown = (f: Figure): string =>
  `${millions(f.median)} ±${((100 * f.spread) / f.median).toFixed(0)}% (cpu ${(f.cpuMedian / 1e6).toFixed(2)})`;
const row = (cells: string[]): string => cells.map((c, i) => (i === 0 ? c.padEnd(42) : c.padStart(30))).join('');

const POLICIES: Array<[string, PolicySpec]> = [
  ['fixed-window', { type: 'fixed-window', limit: 1000, windowMs: 1000 }],
  ['sliding-window-log', { type: 'sliding-window-log', limit: 1000, windowMs: 1000 }],
  ['sliding-window-counter', { type: 'sliding-window-counter', limit: 1000, windowMs: 1000, subWindows: undefined }],
  ['token-bucket', { type: 'token-bucket', capacity: 1000, refillPerSecond: 1000 }],
  ['gcra', { type: 'gcra', rate: 1000, periodMs: 1000, maxBurst: 999 }],
];

function laneOf(name: string, policy: PolicySpec, extra: Partial<LaneSpec> = {}): LaneSpec {
  return { name, policy, mode: 'refuse', maxWaitMs: Infinity, distribution: undefined, ...extra };
}

async function engineCases(): Promise<void> {
  const durationMs = 10_000;
  const rate = (ARRIVALS / durationMs) * 1000;
  const spreads: Array<[string, Arrivals]> = [
    [
      '1 key',
      generateArrivals(
        parseScenario({
          durationMs,
          traffic: [{ type: 'poisson', ratePerSecond: rate }],
          policies: [{ name: 'x', policy: POLICIES[0]![1] }],
        }).traffic,
        durationMs,
        1,
      ),
    ],
    [
      '10,000 Zipf keys',
      generateArrivals(
        parseScenario({
          durationMs,
          traffic: [{ type: 'poisson', ratePerSecond: rate, keys: { count: 10_000, zipfExponent: 1 } }],
          policies: [{ name: 'x', policy: POLICIES[0]![1] }],
        }).traffic,
        durationMs,
        1,
      ),
    ],
  ];
  console.log(
    `engine, refuse mode: ${ARRIVALS.toLocaleString('en')} Poisson arrivals over 10 s of virtual time, ${ROUNDS} rounds`,
  );
  console.log(row(['case', 'simulator', 'bare consumeSync', 'ratio']));
  for (const [spreadName, arrivals] of spreads) {
    for (const [name, policy] of POLICIES) {
      const lane = laneOf(name, policy);
      const algorithm = buildAlgorithm(policy as Parameters<typeof buildAlgorithm>[0], 'policy');
      const [sim, bare] = await measure([
        async () => (await runLane(lane, arrivals, { seed: 1, path: 'p' })).admittedAtMs.length,
        () => (bareLoop(algorithm, arrivals), arrivals.length),
      ]);
      console.log(
        row([`${name}, ${spreadName}`, shown(sim!), shown(bare!), `${(sim!.median / bare!.median).toFixed(2)}x`]),
      );
    }
  }
}

async function wholeRun(): Promise<void> {
  const scenario = {
    durationMs: 10_000,
    traffic: [{ type: 'poisson', ratePerSecond: ARRIVALS / 10, keys: { count: 1000, zipfExponent: 1.1 } }],
    policies: [
      { name: 'fixed', policy: POLICIES[0]![1] },
      { name: 'gcra', policy: POLICIES[4]![1] },
    ],
  };
  const [whole] = await measure([async () => (await simulate(scenario)).arrivals.length * 2]);
  console.log(`\nwhole run (generate, 2 lanes, oracle, series), 1,000 Zipf keys: ${shown(whole!)} decisions`);
}

async function queueingCases(): Promise<void> {
  const durationMs = 10_000;
  const n = Math.min(ARRIVALS, 200_000);
  const traffic = parseScenario({
    durationMs,
    traffic: [{ type: 'poisson', ratePerSecond: (n / durationMs) * 1000, keys: { count: 100 } }],
    policies: [{ name: 'x', policy: POLICIES[0]![1] }],
  }).traffic;
  const arrivals = generateArrivals(traffic, durationMs, 2);
  const lanes: LaneSpec[] = [
    laneOf(
      'wait (acquire on timers), token-bucket',
      { type: 'token-bucket', capacity: 10, refillPerSecond: 150 },
      { mode: 'wait', maxWaitMs: 200 },
    ),
    laneOf('shape (LeakyGate)', { type: 'shaping-queue', intervalMs: 8, capacity: 50 }),
    laneOf(
      'smooth warming-up',
      { type: 'smooth-warming-up', permitsPerSecond: 150, warmupMs: 2000, coldFactor: 3 },
      { maxWaitMs: 200 },
    ),
  ];
  console.log(`\nqueueing engines: ${arrivals.length.toLocaleString('en')} arrivals on 100 keys`);
  for (const lane of lanes) {
    const [figure] = await measure([
      async () => (await runLane(lane, arrivals, { seed: 1, path: 'p' })).admittedAtMs.length,
    ]);
    console.log(row([lane.name, shown(figure!)]));
  }
}

await engineCases();
await wholeRun();
await queueingCases();
