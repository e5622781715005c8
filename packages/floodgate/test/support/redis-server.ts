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
  /** stop ends every process by its pid (resuming a stopped one first) and deletes the temp dir. */
  stop(): Promise<void>;
  /** signal sends `signal` to node `index`'s process (e.g. SIGSTOP to hang it, SIGCONT to resume). */
  signal(index: number, signal: NodeJS.Signals): void;
  /** kill ends node `index` at once (SIGKILL) and resolves once it has exited. */
  kill(index: number): Promise<void>;
  /** restart starts node `index` again on its port, with its arguments, once it has exited (kill it first). */
  restart(index: number): Promise<void>;
}

/** ClusterOptions configures {@link startRedisCluster}. */
export interface ClusterOptions {
  /** cluster-node-timeout, in ms (default 5000): how long before a silent master is failed over. */
  nodeTimeoutMs?: number;
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
      fail(
        new Error(
          missing
            ? 'redis-server was not found on PATH: the Redis tests need it (e.g. apt-get install redis-server); they are not skipped'
            : `redis-server failed to start: ${error.message}`,
        ),
      );
    });
    child.once('exit', (code) =>
      fail(new Error(`redis-server exited with code ${String(code)} before it was ready:\n${output}`)),
    );
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

function ended(child: ChildProcess): boolean {
  return child.exitCode !== null || child.signalCode !== null || child.pid === undefined;
}

/** Ends `child` by its pid with `signal` (resuming it first, as a stopped process ignores SIGTERM). */
function endProcess(child: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  return new Promise<void>((resolve) => {
    if (ended(child)) return resolve();
    child.once('exit', () => resolve());
    process.kill(child.pid!, 'SIGCONT');
    process.kill(child.pid!, signal);
  });
}

async function stopAll(children: readonly ChildProcess[], dir: string): Promise<void> {
  await Promise.all(children.map((child) => endProcess(child, 'SIGTERM')));
  await rm(dir, { recursive: true, force: true });
}

/** Returns the {@link RedisServers} handle over `children`, each restartable with its `args`. */
function serversOf(
  ports: readonly number[],
  children: ChildProcess[],
  args: readonly string[][],
  dir: string,
): RedisServers {
  const child = (index: number): ChildProcess => {
    const found = children[index];
    if (found === undefined) throw new Error(`no redis node ${index}`);
    return found;
  };
  return {
    ports,
    stop: () => stopAll(children, dir),
    signal: (index, signal) => {
      if (!ended(child(index))) process.kill(child(index).pid!, signal);
    },
    kill: (index) => endProcess(child(index), 'SIGKILL'),
    restart: async (index) => {
      if (!ended(child(index))) throw new Error(`redis node ${index} is still running: kill it before restarting it`);
      children[index] = await spawnRedis(args[index]!);
    },
  };
}

/**
 * startRedisServer starts one redis-server on a free loopback port (no persistence, in a temp dir).
 *
 * @example
 * const redis = await startRedisServer();
 * after(() => redis.stop());
 */
export function startRedisServer(): Promise<RedisServers> {
  return onFreshPorts(async () => {
    const dir = await mkdtemp(join(tmpdir(), 'floodgate-redis-'));
    const port = await freePort(false, new Set());
    const args = baseArgs(port, dir);
    try {
      return serversOf([port], [await spawnRedis(args)], [args], dir);
    } catch (error) {
      await rm(dir, { recursive: true, force: true });
      throw error;
    }
  });
}

/** How many times a start is tried on new ports when a port found free was taken before redis-server bound it. */
const START_ATTEMPTS = 4;

/**
 * onFreshPorts runs `start`, and again on new ports (up to {@link START_ATTEMPTS} times in all)
 * while it fails because a port it found free was taken before redis-server could bind it: other
 * test files start servers on random ports at the same time, so a free port can be gone a moment later.
 */
async function onFreshPorts(start: () => Promise<RedisServers>): Promise<RedisServers> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await start();
    } catch (error) {
      if (attempt >= START_ATTEMPTS || !/Address already in use/.test(String(error))) throw error;
    }
  }
}

/**
 * startRedisCluster starts a Redis Cluster of three masters with one replica each (six nodes) on
 * free loopback ports, and resolves once every node reports `cluster_state:ok` and every replica has synced. `nodes-${port}.conf`
 * lives in the temp dir, so a restarted node rejoins the cluster.
 */
export function startRedisCluster(options: ClusterOptions = {}): Promise<RedisServers> {
  return onFreshPorts(() => startCluster(options));
}

async function startCluster(options: ClusterOptions): Promise<RedisServers> {
  const nodeTimeoutMs = options.nodeTimeoutMs ?? 5000;
  const dir = await mkdtemp(join(tmpdir(), 'floodgate-cluster-'));
  const taken = new Set<number>();
  for (let i = 0; i < 6; i++) taken.add(await freePort(true, taken));
  const ports = [...taken];
  const children: ChildProcess[] = [];
  const args = ports.map((port) => [
    ...baseArgs(port, dir),
    '--cluster-enabled',
    'yes',
    '--cluster-config-file',
    `nodes-${port}.conf`,
    '--cluster-node-timeout',
    String(nodeTimeoutMs),
    '--repl-diskless-sync-delay',
    '0',
  ]);
  try {
    for (const nodeArgs of args) children.push(await spawnRedis(nodeArgs));
    const nodes = ports.map((port) => `127.0.0.1:${port}`);
    await run('redis-cli', ['--cluster', 'create', ...nodes, '--cluster-replicas', '1', '--cluster-yes'], {
      timeout: READY_TIMEOUT_MS,
    });
    await waitForClusterOk(ports);
  } catch (error) {
    await stopAll(children, dir);
    throw error;
  }
  return serversOf(ports, children, args, dir);
}

async function waitForClusterOk(ports: readonly number[]): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  for (;;) {
    const infos = await Promise.all(
      ports.map((port) => run('redis-cli', ['-p', String(port), 'info', 'all']).then((r) => r.stdout)),
    );
    const clusterOk = await Promise.all(
      ports.map((port) =>
        run('redis-cli', ['-p', String(port), 'cluster', 'info']).then((r) => r.stdout.includes('cluster_state:ok')),
      ),
    );
    // Replicas must have synced once, or none would be promoted when its master fails.
    const synced = infos.every((info) => !info.includes('role:slave') || info.includes('master_link_status:up'));
    if (clusterOk.every(Boolean) && synced) return;
    if (Date.now() > deadline)
      throw new Error(
        `the Redis Cluster on ports ${ports.join(', ')} did not reach cluster_state:ok with every replica in sync`,
      );
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
