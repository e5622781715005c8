import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const READY_TIMEOUT_MS = 15_000;

/** RedisServers is a set of redis-server processes started for a test, on loopback ports. */
export interface RedisServers {
  /** ports of every node (for a cluster: masters and replicas, in creation order). */
  readonly ports: readonly number[];
  /** stop ends every process by its pid and deletes the temp dir. */
  stop(): Promise<void>;
}

/** portIsFree returns whether `port` can be bound on 127.0.0.1 right now. */
function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/**
 * freePort returns a loopback port that is free now (never 6379), and whose cluster bus port
 * (port + 10000) is free too when `withBus`.
 */
async function freePort(withBus: boolean, taken: ReadonlySet<number>): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = 20_000 + Math.floor(Math.random() * 30_000);
    if (port === 6379 || taken.has(port)) continue;
    if ((await portIsFree(port)) && (!withBus || (await portIsFree(port + 10_000)))) return port;
  }
  throw new Error('no free loopback port found for redis-server');
}

/** Spawns redis-server and resolves once it accepts connections; fails loudly when it cannot. */
function spawnRedis(args: readonly string[]): Promise<ChildProcess> {
  return new Promise((resolve, reject) => {
    const child = spawn('redis-server', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    let settled = false;
    const fail = (error: Error): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      reject(error);
    };
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      fail(new Error(`redis-server ${args.join(' ')} did not become ready within ${READY_TIMEOUT_MS} ms:\n${output}`));
    }, READY_TIMEOUT_MS);
    child.once('error', (error: NodeJS.ErrnoException) => {
      const missing = error.code === 'ENOENT';
      fail(new Error(missing ? 'redis-server was not found on PATH: the Redis tests need it (e.g. apt-get install redis-server); they are not skipped' : `redis-server failed to start: ${error.message}`));
    });
    child.once('exit', (code) => fail(new Error(`redis-server exited with code ${String(code)} before it was ready:\n${output}`)));
    const watch = (chunk: Buffer): void => {
      output += chunk.toString();
      if (!settled && output.includes('Ready to accept connections')) {
        settled = true;
        clearTimeout(timer);
        resolve(child);
      }
    };
    child.stdout.on('data', watch);
    child.stderr.on('data', watch);
  });
}

function baseArgs(port: number, dir: string): string[] {
  return ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir];
}

async function stopAll(children: readonly ChildProcess[], dir: string): Promise<void> {
  await Promise.all(
    children.map(
      (child) =>
        new Promise<void>((resolve) => {
          if (child.exitCode !== null || child.pid === undefined) return resolve();
          child.once('exit', () => resolve());
          process.kill(child.pid, 'SIGTERM');
        }),
    ),
  );
  await rm(dir, { recursive: true, force: true });
}

/**
 * startRedisServer starts one redis-server on a free loopback port (no persistence, in a temp dir).
 *
 * @example
 * const redis = await startRedisServer();
 * after(() => redis.stop());
 */
export async function startRedisServer(): Promise<RedisServers> {
  const dir = await mkdtemp(join(tmpdir(), 'floodgate-redis-'));
  const port = await freePort(false, new Set());
  const child = await spawnRedis(baseArgs(port, dir));
  return { ports: [port], stop: () => stopAll([child], dir) };
}

/**
 * startRedisCluster starts a Redis Cluster of three masters with one replica each (six nodes) on
 * free loopback ports, and resolves once every node reports `cluster_state:ok`.
 */
export async function startRedisCluster(): Promise<RedisServers> {
  const dir = await mkdtemp(join(tmpdir(), 'floodgate-cluster-'));
  const taken = new Set<number>();
  for (let i = 0; i < 6; i++) taken.add(await freePort(true, taken));
  const ports = [...taken];
  const children: ChildProcess[] = [];
  try {
    for (const port of ports) {
      const args = [...baseArgs(port, dir), '--cluster-enabled', 'yes', '--cluster-config-file', `nodes-${port}.conf`, '--cluster-node-timeout', '5000'];
      children.push(await spawnRedis(args));
    }
    const nodes = ports.map((port) => `127.0.0.1:${port}`);
    await run('redis-cli', ['--cluster', 'create', ...nodes, '--cluster-replicas', '1', '--cluster-yes'], { timeout: READY_TIMEOUT_MS });
    await waitForClusterOk(ports);
  } catch (error) {
    await stopAll(children, dir);
    throw error;
  }
  return { ports, stop: () => stopAll(children, dir) };
}

async function waitForClusterOk(ports: readonly number[]): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  for (;;) {
    const infos = await Promise.all(ports.map((port) => run('redis-cli', ['-p', String(port), 'cluster', 'info']).then((r) => r.stdout)));
    if (infos.every((info) => info.includes('cluster_state:ok'))) return;
    if (Date.now() > deadline) throw new Error(`the Redis Cluster on ports ${ports.join(', ')} did not reach cluster_state:ok`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
