// Runs the fuzz campaign (docs/development.md, "Fuzzing"): every test under a test/fuzz/ folder with
// FLOODGATE_FUZZ_RUNS inputs per target (--runs), each target stopping early after --seconds when
// given, --jobs files at a time. Prints each target's line (inputs tried, crashes, slowest call)
// and a summary; exits 1 when any target failed, whose fast-check report names the input and seed.
//
//   node scripts/fuzz.mjs [--runs 1000000] [--seconds 600] [--jobs 1] [file ...]
import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';

function* fuzzFiles(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name === 'node_modules' || entry.name === 'dist') continue;
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* fuzzFiles(path);
    else if (entry.name.endsWith('.test.ts') && path.includes('/test/fuzz/')) yield path;
  }
}

function option(name, fallback) {
  const at = process.argv.indexOf(name);
  return at === -1 ? fallback : Number(process.argv[at + 1]);
}

const runs = option('--runs', 1_000_000);
const seconds = option('--seconds', 0);
const jobs = option('--jobs', 1);
const named = process.argv.slice(2).filter((a, i, all) => !a.startsWith('--') && !all[i - 1]?.startsWith('--'));
const files = named.length > 0 ? named : [...fuzzFiles('packages')].sort();
const env = {
  ...process.env,
  FLOODGATE_FUZZ_RUNS: String(runs),
  ...(seconds > 0 ? { FLOODGATE_FUZZ_SECONDS: String(seconds) } : {}),
};

/** Runs one file and resolves with its status, its targets' lines and its duration. */
function runFile(file) {
  const startMs = Date.now();
  const args = [
    '--conditions=floodgate-source',
    '--import',
    'tsx',
    '--test',
    '--test-reporter=tap',
    '--test-timeout=0',
    file,
  ];
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'], env });
  let out = '';
  child.stdout.on('data', (chunk) => (out += chunk));
  return new Promise((resolve) => {
    child.on('exit', (code) => {
      const lines = out
        .split('\n')
        .filter((l) => /^# fuzz /.test(l))
        .map((l) => l.slice(2));
      const seconds = (Date.now() - startMs) / 1000;
      for (const l of lines) console.log(l);
      console.log(`${file}: ${code === 0 ? 'passed' : 'FAILED'} in ${seconds.toFixed(0)} s`);
      if (code !== 0)
        console.log(
          out
            .split('\n')
            .filter((l) => /not ok|error|Counterexample|seed/i.test(l))
            .join('\n'),
        );
      resolve({ file, code, lines });
    });
  });
}

console.log(
  `fuzzing ${files.length} files, ${runs} inputs per target${seconds > 0 ? `, at most ${seconds} s each` : ''}, ${jobs} at a time`,
);
const startMs = Date.now();
const queue = [...files];
const results = [];
await Promise.all(
  Array.from({ length: Math.max(1, jobs) }, async () => {
    while (queue.length > 0) results.push(await runFile(queue.shift()));
  }),
);
const failed = results.filter((r) => r.code !== 0);
const targets = results.flatMap((r) => r.lines);
console.log(
  `\n${targets.length} targets in ${((Date.now() - startMs) / 60_000).toFixed(1)} min: ${failed.length === 0 ? 'no crash, no call over 1 s' : `${failed.length} files FAILED`}`,
);
process.exit(failed.length === 0 ? 0 : 1);
