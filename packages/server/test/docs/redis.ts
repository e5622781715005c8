/**
 * The Redis a docs command names (`--redis 127.0.0.1:6380`, `redis://127.0.0.1:6380`), itself or in
 * the config file it names: a redis-server this test starts on that loopback port, never 6379, and
 * stops by pid.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const READY_TIMEOUT_MS = 10_000;

/** redisPortsNamed returns the loopback ports of the Redis servers `command` names. */
export function redisPortsNamed(command: string): number[] {
  const found = [
    ...command.matchAll(/(?:--redis(?:-cluster)?[ =]|rediss?:\/\/(?:[^@\s]*@)?)(?:127\.0\.0\.1|localhost):(\d+)/g),
  ];
  return found.map((m) => Number(m[1]));
}

/** startRedisOn starts redis-server on 127.0.0.1:`port` (not persisted) and resolves with its stop function. */
export async function startRedisOn(port: number): Promise<() => Promise<void>> {
  if (port === 6379) throw new Error('a docs command names Redis on 6379, which tests never touch: use another port');
  const dir = await mkdtemp(join(tmpdir(), 'floodgate-docs-redis-'));
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let output = '';
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`redis-server on ${port} not ready:\n${output}`)),
      READY_TIMEOUT_MS,
    );
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('Ready to accept connections')) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`redis-server on ${port} exited (${String(code)}): is the port taken?\n${output}`));
    });
  });
  return async () => {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    process.kill(child.pid!, 'SIGTERM');
    await exited;
    await rm(dir, { recursive: true, force: true });
  };
}
