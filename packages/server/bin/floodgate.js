#!/usr/bin/env node
// The `floodgate` command. One fact decides how it runs: is the built CLI, ../dist/cli/main.js, there?
//
// - Built (an installed package, or a checkout after `npm run build`): it is imported here, in this
//   process. No TypeScript is compiled at run time, and the CLI's own handlers receive the signals:
//   SIGTERM and SIGINT drain, SIGHUP reloads (see src/cli/commands.ts and src/cli/ratelimit.ts).
// - Not built (a fresh clone after `npm ci`, as `npm start` and the tests use it): src/cli/main.ts
//   runs in a child process through tsx, with the `floodgate-source` condition so that the workspace's
//   packages resolve to their sources too, and this process passes the signals on to it.
//
// In a checkout, `npm run build` therefore switches this command to dist (as old as that build);
// `rm -rf packages/server/dist` switches it back to the sources.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const built = join(here, '..', 'dist', 'cli', 'main.js');

if (existsSync(built)) {
  await import(pathToFileURL(built).href);
} else {
  const tsx = createRequire(import.meta.url).resolve('tsx');
  const main = join(here, '..', 'src', 'cli', 'main.ts');
  const child = spawn(
    process.execPath,
    ['--conditions=floodgate-source', '--import', tsx, main, ...process.argv.slice(2)],
    { stdio: 'inherit' },
  );
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP']) process.on(signal, () => child.kill(signal));
  child.on('exit', (code, signal) => process.exit(code ?? (signal === null ? 1 : 128)));
}
