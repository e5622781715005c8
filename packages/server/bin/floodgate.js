#!/usr/bin/env node
// The `floodgate` command: runs the TypeScript entry point through tsx, resolving the library from source.
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const tsx = createRequire(import.meta.url).resolve('tsx');
const main = join(here, '..', 'src', 'cli', 'main.ts');
const result = spawnSync(process.execPath, ['--conditions=floodgate-source', '--import', tsx, main, ...process.argv.slice(2)], { stdio: 'inherit' });
process.exit(result.status ?? 1);
