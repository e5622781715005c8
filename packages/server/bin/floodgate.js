#!/usr/bin/env node
// The `floodgate` command: runs the TypeScript entry point through tsx, resolving the library from
// source, and passes signals on so that SIGTERM drains and SIGHUP reloads the gateway itself.
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const tsx = createRequire(import.meta.url).resolve('tsx');
const main = join(here, '..', 'src', 'cli', 'main.ts');
const child = spawn(process.execPath, ['--conditions=floodgate-source', '--import', tsx, main, ...process.argv.slice(2)], { stdio: 'inherit' });
for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP']) process.on(signal, () => child.kill(signal));
child.on('exit', (code, signal) => process.exit(code ?? (signal === null ? 1 : 128)));
