// Prints the workspace's test files for `npm test` (all of them) or `npm run test:fast` (`--fast`):
// those that start no process, server, Redis or browser and wait on no real time (about half of
// the files). A file is slow when its text does any of what SLOW names.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const SLOW =
  /spawn|execFile|fork\(|useRedis|redis-server|chromium|playwright|createServer|\.listen\(|Gateway\.start|startGateway|startNginx|fetch\(|new Worker|setTimeout\(r|\/package\//;

function* testFiles(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name === 'node_modules' || entry.name === 'dist') continue;
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* testFiles(path);
    else if (entry.name.endsWith('.test.ts')) yield path;
  }
}

const fast = process.argv.includes('--fast');
const files = [...testFiles('packages')].sort().filter((f) => !fast || !SLOW.test(readFileSync(f, 'utf8')));
console.log(files.join('\n'));
