/**
 * The simulator's report and memory benchmark, from the repository root:
 *
 *   node --conditions=floodgate-source --import tsx packages/simulator/bench/report.ts [--quick]
 *
 * Prints figures and asserts nothing. Targets: a 1,000,000-request scenario's report renders in
 * under 2 s in Chromium and weighs under 2 MB; at least 1,000,000 decisions a second in process;
 * at most 200 MB peak memory for 2,000,000 requests.
 *
 * - speed: `simulate()` of 1,000,000 Poisson requests on 10,000 Zipf keys through two lanes (a
 *   fixed window and a token bucket), from generating the traffic to the scores and the charts'
 *   series, beside the floor under it: the same arrivals fed straight to `limiter.consumeSync`
 *   in a bare loop, once per lane. Median of rounds, alternating; rates per second of wall time
 *   and of this process's CPU time (steadier on a shared machine).
 * - memory: the peak resident set (maxRSS) of a child process (report-child.ts) that runs
 *   `simulate()` of 2,000,000 requests through the same two lanes and renders the report, beside
 *   a child that only loads the same modules (the floor: node, tsx and the packages).
 * - report: the HTML report of 1,000,000 requests through four lanes, at 100 chart steps and at
 *   5,000; its size, and the time Debian's Chromium (/usr/bin/chromium) takes from navigation to
 *   the first frame painted after the load event, median of rounds, beside an empty page's.
 */
import { spawnSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { Limiter, ManualClock, MemoryStore, type Algorithm } from 'floodgate';
import { chromium } from 'playwright-core';
import {
  buildAlgorithm,
  generateArrivals,
  parseScenario,
  renderCharts,
  renderHtmlReport,
  simulate,
  type Arrivals,
} from '../src/index.js';

const { values: flags } = parseArgs({
  options: { quick: { type: 'boolean', default: false } },
});
const ROUNDS = flags.quick === true ? 3 : 5;

/** A scenario of `requests` Poisson requests over 100 s on 10,000 Zipf keys, through `lanes`. */
function scenarioOf(requests: number, lanes: object[], bucketMs?: number): object {
  return {
    seed: 1,
    durationMs: 100_000,
    ...(bucketMs === undefined ? {} : { bucketMs }),
    traffic: [{ type: 'poisson', ratePerSecond: requests / 100, keys: { count: 10_000, zipfExponent: 1 } }],
    policies: lanes,
  };
}

const TWO_LANES = [
  { name: 'fixed window', policy: { type: 'fixed-window', limit: 100, windowMs: 1000 } },
  { name: 'token bucket', policy: { type: 'token-bucket', capacity: 100, refillPerSecond: 100 } },
];
const FOUR_LANES = [
  ...TWO_LANES,
  { name: 'sliding log', policy: { type: 'sliding-window-log', limit: 100, windowMs: 1000 } },
  { name: 'gcra', policy: { type: 'gcra', rate: 100, periodMs: 1000, maxBurst: 99 } },
];

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[values.length >> 1]!;
const mb = (bytes: number): string =>
  bytes < 1048576 ? `${(bytes / 1024).toFixed(0)} kB` : `${(bytes / 1048576).toFixed(1)} MB`;

/** The floor: each lane's policy fed the arrivals through `consumeSync` in a bare loop. */
function bareLoop(arrivals: Arrivals, algorithms: Algorithm[]): number {
  for (const policy of algorithms) {
    const clock = new ManualClock(0);
    const limiter = new Limiter({ policy, store: new MemoryStore({ maxKeys: 20_000 }), clock });
    const options = { cost: 1 };
    for (let i = 0; i < arrivals.length; i++) {
      clock.set(arrivals.atMs[i]!);
      options.cost = arrivals.costs[i]!;
      limiter.consumeSync(arrivals.keys[arrivals.keyIds[i]!]!, options);
    }
  }
  return arrivals.length * algorithms.length;
}

async function speed(): Promise<void> {
  const scenario = scenarioOf(1_000_000, TWO_LANES);
  const checked = parseScenario(scenario);
  const arrivals = generateArrivals(checked.traffic, checked.durationMs, checked.seed);
  const algorithms = checked.policies.map((lane, i) => buildAlgorithm(lane.policy as never, `policies[${i}]`));
  const subjects: Array<[string, () => Promise<number> | number]> = [
    ['simulate()', async () => (await simulate(scenario)).arrivals.length * 2],
    ['bare consumeSync loop', () => bareLoop(arrivals, algorithms)],
  ];
  const wall: number[][] = subjects.map(() => []);
  const cpu: number[][] = subjects.map(() => []);
  for (let round = 0; round <= ROUNDS; round++) {
    for (const [k, [, subject]] of subjects.entries()) {
      const started = performance.now();
      const cpuStart = process.cpuUsage();
      const decisions = await subject();
      const used = process.cpuUsage(cpuStart);
      if (round === 0) continue; // warm-up
      wall[k]!.push(decisions / ((performance.now() - started) / 1000));
      cpu[k]!.push(decisions / ((used.user + used.system) / 1e6));
    }
  }
  console.log(`speed: ${arrivals.length.toLocaleString('en')} requests x 2 lanes, ${ROUNDS} rounds`);
  for (const [k, [name]] of subjects.entries())
    console.log(
      `  ${name.padEnd(22)} ${(median(wall[k]!) / 1e6).toFixed(2)} M decisions/s wall, ${(median(cpu[k]!) / 1e6).toFixed(2)} M/s CPU`,
    );
  console.log(
    `  simulate() / bare loop: ${(median(wall[0]!) / median(wall[1]!)).toFixed(2)} wall, ${(median(cpu[0]!) / median(cpu[1]!)).toFixed(2)} CPU`,
  );
}

function memory(): void {
  const script = fileURLToPath(new URL('report-child.ts', import.meta.url));
  const peak = (what: string): number => {
    const out = spawnSync(process.execPath, ['--conditions=floodgate-source', '--import', 'tsx', script, what], {
      encoding: 'utf8',
    });
    if (out.status !== 0) throw new Error(`child ${what} failed: ${out.stderr}`);
    return Number(out.stdout);
  };
  const runs: number[] = [];
  const floors: number[] = [];
  for (let round = 0; round < Math.min(3, ROUNDS); round++) {
    floors.push(peak('load'));
    runs.push(peak('run'));
  }
  console.log(`memory: peak RSS of a process, 2,000,000 requests x 2 lanes, median of ${runs.length}`);
  console.log(`  simulate() and the report  ${mb(median(runs))}`);
  console.log(`  modules loaded only        ${mb(median(floors))}`);
  console.log(`  the run's own              ${mb(median(runs) - median(floors))}`);
}

async function report(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'floodgate-report-bench-'));
  const browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run'],
  });
  try {
    const empty = join(dir, 'empty.html');
    await writeFile(empty, '<!doctype html><title>empty</title>');
    const pages: Array<[string, string, number]> = [['empty page', empty, 0]];
    for (const bucketMs of [undefined, 20]) {
      const result = await simulate(scenarioOf(1_000_000, FOUR_LANES, bucketMs));
      const html = renderHtmlReport(result, renderCharts(result));
      const file = join(dir, `report-${result.steps}.html`);
      await writeFile(file, html);
      pages.push([`report, ${result.steps} steps`, file, Buffer.byteLength(html)]);
    }
    console.log(`report: 1,000,000 requests x 4 lanes in Chromium, median of ${ROUNDS} loads`);
    for (const [name, file, bytes] of pages) {
      const times: number[] = [];
      for (let round = 0; round <= ROUNDS; round++) {
        const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
        const started = performance.now();
        await page.goto(pathToFileURL(file).href, { waitUntil: 'load' });
        await page.evaluate('new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))');
        if (round > 0) times.push(performance.now() - started);
        await page.close();
      }
      console.log(
        `  ${name.padEnd(24)} ${bytes === 0 ? '' : `${mb(bytes)}, `}${median(times).toFixed(0)} ms to a painted frame`,
      );
    }
  } finally {
    await browser.close();
    await rm(dir, { recursive: true, force: true });
  }
}

await speed();
memory();
await report();
