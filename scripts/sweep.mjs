// Runs every randomised test of the workspace many times over, in one run (docs/development.md, "Sweeping the randomised tests"): the
// seeded tests (those that call seedsFrom) over --seeds fresh seeds each, besides the seeds they keep
// as fixed cases, and every other test that scales with FLOODGATE_SWEEP (fast-check properties and
// their case counts, trials on real timers) at --scale times their usual count. A failure names
// its seed (FLOODGATE_TIME_SEED=...) or fast-check's seed and path; keep it as a fixed case.
//
//   node scripts/sweep.mjs [--seeds 300] [--scale 30] [file ...]
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

function* testFiles(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name === 'node_modules' || entry.name === 'dist') continue;
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* testFiles(path);
    else if (entry.name.endsWith('.test.ts')) yield path;
  }
}

function option(name, fallback) {
  const at = process.argv.indexOf(name);
  return at === -1 ? fallback : Number(process.argv[at + 1]);
}

const seeds = option('--seeds', 300);
const scale = option('--scale', 30);
const named = process.argv.slice(2).filter((a, i, all) => !a.startsWith('--') && !all[i - 1]?.startsWith('--'));
const all = named.length > 0 ? named : [...testFiles('packages')].sort();
const text = (f) => readFileSync(f, 'utf8');
// A file that imports a check module (rlqs-redis-checks.ts) sweeps through it.
const sweeps = (f) => /seedsFrom\(|\bruns\(|sweepCount\(|-checks\.js'/.test(text(f));
const seeded = all.filter((f) => /seedsFrom\(/.test(text(f)));
const scaled = all.filter((f) => sweeps(f) && !seeded.includes(f));

let failed = 0;
for (const [files, count, what] of [
  [seeded, seeds, `seeded tests, ${seeds} fresh seeds each`],
  [scaled, scale, `fast-check properties and random trials, ${scale}x their cases`],
]) {
  if (files.length === 0) continue;
  console.log(`\n${what}: ${files.length} files\n  ${files.join('\n  ')}`);
  const startMs = Date.now();
  const run = spawnSync(
    process.execPath,
    [
      '--conditions=floodgate-source',
      '--import',
      'tsx',
      '--test',
      '--test-reporter=dot',
      '--test-timeout=3600000',
      ...files,
    ],
    { stdio: ['ignore', 'inherit', 'inherit'], env: { ...process.env, FLOODGATE_SWEEP: String(count) } },
  );
  console.log(`${what}: ${run.status === 0 ? 'passed' : 'FAILED'} in ${((Date.now() - startMs) / 1000).toFixed(0)} s`);
  if (run.status !== 0) failed++;
}
process.exit(failed === 0 ? 0 : 1);
