/**
 * examples/pm2 as a user runs it: PM2 starts the app in cluster mode (2 instances on one port) and
 * the limits host beside it; the app's limit of 10 is one limit for both instances.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { request } from 'node:http';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../../../../', import.meta.url));
const PM2 = join(ROOT, 'node_modules', 'pm2', 'bin', 'pm2');

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

/** One GET on a fresh connection: the status and the instance that answered (0 when none did). */
function get(port: number): Promise<{ status: number; instance: string }> {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path: '/', agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, instance: String(res.headers['x-instance']) }));
    });
    req.on('error', () => resolve({ status: 0, instance: '' }));
    req.end();
  });
}

test('PM2 cluster mode, 2 instances, one limit of 10 for both', { timeout: 120_000 }, async () => {
  const dir = await mkdtemp(join(tmpdir(), 'floodgate-pm2-'));
  const port = await freePort();
  const env = {
    ...process.env,
    PM2_HOME: join(dir, 'pm2'),
    PORT: String(port),
    LIMITS_SOCKET: join(dir, 'limits.sock'),
  };
  const pm2 = (...args: string[]) => run(process.execPath, [PM2, ...args], { env, cwd: ROOT, timeout: 60_000 });
  try {
    await pm2('start', 'examples/pm2/ecosystem.config.cjs');
    // Up once both instances say they listen (PM2 keeps each instance's output in its own file).
    const logs = join(env.PM2_HOME, 'logs');
    for (let i = 0; i < 300; i++) {
      const names = await readdir(logs).catch(() => [] as string[]);
      const said = await Promise.all(
        names.filter((n) => n.startsWith('app-out')).map((n) => readFile(join(logs, n), 'utf8')),
      );
      if (said.filter((text) => text.includes('listening')).length >= 2) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const answers: Array<{ status: number; instance: string }> = [];
    for (let i = 0; i < 30; i++) answers.push(await get(port));
    assert.equal(answers.filter((a) => a.status === 200).length, 10, JSON.stringify(answers));
    assert.equal(answers.filter((a) => a.status === 429).length, 20);
    assert.equal(new Set(answers.map((a) => a.instance)).size, 2, 'both instances answered');
  } finally {
    await pm2('kill').catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
  }
});
