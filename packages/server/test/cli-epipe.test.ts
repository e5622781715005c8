/**
 * `floodgate --help | head`: a reader that closes the pipe early is not an error. The launcher is
 * run as a user runs it, its stdout a pipe closed before it writes; it exits 0 with no EPIPE
 * stack trace on stderr.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { test } from 'node:test';
import { FLOODGATE_BIN } from './support/cli.js';

for (const args of [['--help'], ['serve', '--help'], ['schema']])
  test(`floodgate ${args.join(' ')} into a closed pipe exits 0, quietly`, async () => {
    const child = spawn(process.execPath, [FLOODGATE_BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.destroy();
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
    assert.equal(stderr, '', 'no stack trace');
    assert.equal(code, 0);
  });
