/**
 * The memory store's overflow tier beside its exact table: decisions per second on fresh keys.
 *
 * - `exact`: the table has room, so every fresh key is inserted into it (the table already holds
 *   `maxKeys` keys, as in the other case).
 * - `overflow`: the table is full of keys that are not at rest, so every fresh key is decided by
 *   the count-min sketch (after the table has looked for a key at rest to replace).
 *
 * One process per case and pair: the two cases of a policy run alternately, `PAIRS` times, each
 * child timing `CHILD_ROUNDS` rounds of `--keys` fresh keys (strings made before timing) after a
 * warm-up round; the ratio overflow / exact is taken pair by pair (so load that drifts during the
 * run moves both sides of a ratio alike) and its median printed with the range. The sketch's memory
 * is printed per key of capacity. Nothing is asserted.
 *
 *   node --conditions=floodgate-source --import tsx bench/overflow.ts [--keys 200000] [--max-keys 100000]
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import {
  fixedWindow,
  gcra,
  MemoryStore,
  slidingWindowCounter,
  tokenBucket,
  type Algorithm,
} from '../packages/floodgate/src/index.js';
import { OverflowSketch } from '../packages/floodgate/src/stores/overflow-sketch.js';

const CHILD_ROUNDS = 3;
const PAIRS = 5;
const POLICIES: Record<string, () => Algorithm> = {
  'fixed-window': () => fixedWindow({ limit: 100, windowMs: 3_600_000 }),
  gcra: () => gcra({ rate: 1, periodMs: 3_600_000, maxBurst: 99 }),
  'token-bucket': () => tokenBucket({ capacity: 100, refillPerSecond: 0.001 }),
  'sliding-counter': () => slidingWindowCounter({ limit: 100, windowMs: 3_600_000 }),
};

function option(name: string, fallback: number): number {
  const at = process.argv.indexOf(name);
  return at >= 0 ? Number(process.argv[at + 1]) : fallback;
}

/** Runs one case in this process and prints `{ rates }` as JSON: decisions/s of each round. */
function child(policyName: string, mode: string, keys: number, maxKeys: number): void {
  const policy = POLICIES[policyName]!();
  const room = mode === 'exact' ? maxKeys + (CHILD_ROUNDS + 1) * keys : maxKeys;
  const table = new MemoryStore({ maxKeys: room }).bind(policy);
  const nowMs = 1_700_000_000_000;
  // Keys that are not at rest for the whole run: the table is full of them in `overflow`.
  for (let i = 0; i < maxKeys; i++) table.consume(`held:${i}`, 1, nowMs);
  // One warm-up round, then the timed ones, each on keys never seen.
  const rates: number[] = [];
  for (let round = 0; round <= CHILD_ROUNDS; round++) {
    const fresh = Array.from({ length: keys }, (_, i) => `fresh:${round}:${i}`);
    let admitted = 0;
    const start = process.hrtime.bigint();
    for (let i = 0; i < fresh.length; i++) if (table.consume(fresh[i]!, 1, nowMs + 1).allowed) admitted++;
    const seconds = Number(process.hrtime.bigint() - start) / 1e9;
    if (admitted !== keys) throw new Error(`${mode}: ${keys - admitted} fresh keys refused`);
    if (round > 0) rates.push(keys / seconds);
  }
  console.log(JSON.stringify({ rates }));
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[sorted.length >> 1]!;
}

/** Runs one case in a child process and returns its median decisions/s. */
function runCase(policyName: string, mode: string, keys: number, maxKeys: number): number {
  const self = fileURLToPath(import.meta.url);
  const run = spawnSync(
    process.execPath,
    [
      '--conditions=floodgate-source',
      '--import',
      'tsx',
      self,
      'child',
      policyName,
      mode,
      String(keys),
      String(maxKeys),
    ],
    { encoding: 'utf8' },
  );
  if (run.status !== 0) throw new Error(`${policyName}/${mode} failed: ${run.stderr}`);
  const { rates } = JSON.parse(run.stdout.trim().split('\n').pop()!) as { rates: number[] };
  return median(rates);
}

function parent(): void {
  const keys = option('--keys', 200_000);
  const maxKeys = option('--max-keys', 100_000);
  console.log(
    `fresh keys per round: ${keys}, maxKeys: ${maxKeys}; ${PAIRS} pairs of processes, ${CHILD_ROUNDS} rounds each`,
  );
  for (const policyName of Object.keys(POLICIES)) {
    const exact: number[] = [];
    const overflow: number[] = [];
    const ratios: number[] = [];
    for (let pair = 0; pair < PAIRS; pair++) {
      exact.push(runCase(policyName, 'exact', keys, maxKeys));
      overflow.push(runCase(policyName, 'overflow', keys, maxKeys));
      ratios.push(overflow[pair]! / exact[pair]!);
    }
    const m = (values: number[]): string => (median(values) / 1e6).toFixed(2);
    console.log(
      `${policyName.padEnd(16)} exact ${m(exact)} M/s, overflow ${m(overflow)} M/s; overflow / exact ${median(ratios).toFixed(2)}x ` +
        `(pairs ${Math.min(...ratios).toFixed(2)}-${Math.max(...ratios).toFixed(2)})`,
    );
  }
  const sketch = OverflowSketch.create(POLICIES.gcra!(), { cellsPerRow: maxKeys })!;
  console.log(
    `sketch memory: ${sketch.bytes} bytes for maxKeys ${maxKeys} = ${sketch.bytes / maxKeys} B per key of capacity (allocated when the table first fills)`,
  );
}

if (process.argv[2] === 'child')
  child(process.argv[3]!, process.argv[4]!, Number(process.argv[5]), Number(process.argv[6]));
else parent();
