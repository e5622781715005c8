/**
 * Worker processes for the chaos tests (worker.ts): each puts a steady load on a RedisStore at its
 * defaults through its own client, and reports its status every 100 ms, so a test can wait until
 * every process is decided by Redis again after a fault, and check at the end that no caller saw
 * an error, every decision settled and no process crashed.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { WorkerArgs, WorkerStatus } from './worker.js';

const WORKER = fileURLToPath(new URL('./worker.ts', import.meta.url));

/** Worker is one running worker process and its latest status. */
export class Worker {
  status: WorkerStatus | undefined;
  private buffered = '';
  private stderr = '';
  private readonly waiters = new Set<() => void>();
  /** exited resolves with the exit code (null when killed by a signal) and the signal. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  constructor(private readonly child: ChildProcess) {
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => this.read(chunk));
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (this.stderr += chunk));
    this.exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  }

  /** until resolves once `check(status)` holds, or rejects after `withinMs` naming `what`. */
  until(what: string, check: (status: WorkerStatus) => boolean, withinMs: number): Promise<void> {
    return new Promise((resolve, reject) => {
      const test = (): void => {
        if (this.status === undefined || !check(this.status)) return;
        done();
        resolve();
      };
      const timer = setTimeout(() => {
        done();
        reject(
          new Error(
            `a worker: not ${what} within ${withinMs} ms; last status ${JSON.stringify(this.status)}; stderr: ${this.stderr.slice(-2000)}`,
          ),
        );
      }, withinMs);
      const done = (): void => {
        clearTimeout(timer);
        this.waiters.delete(test);
      };
      this.waiters.add(test);
      test();
    });
  }

  /** stop asks the worker to stop and resolves with its last status once it has exited. */
  async stop(): Promise<{ last: WorkerStatus; code: number | null; signal: NodeJS.Signals | null; stderr: string }> {
    this.child.stdin!.end('stop\n');
    const { code, signal } = await this.exited;
    return { last: this.status!, code, signal, stderr: this.stderr };
  }

  private read(chunk: string): void {
    this.buffered += chunk;
    let nl: number;
    while ((nl = this.buffered.indexOf('\n')) >= 0) {
      const line = this.buffered.slice(0, nl);
      this.buffered = this.buffered.slice(nl + 1);
      if (line.startsWith('{')) this.status = JSON.parse(line) as WorkerStatus;
    }
    for (const waiter of this.waiters) waiter();
  }
}

/**
 * startWorkers starts `count` workers on the Redis (or cluster masters) at `ports`, and resolves
 * once each has had a decision from Redis.
 */
export async function startWorkers(count: number, args: Omit<WorkerArgs, 'prefix'>): Promise<Worker[]> {
  const workers = Array.from({ length: count }, (_, i) => {
    const json = JSON.stringify({ ...args, prefix: `chaos-${process.pid}-${i}:` });
    return new Worker(
      spawn(process.execPath, ['--conditions=floodgate-source', '--import', 'tsx', WORKER, json], {
        stdio: ['pipe', 'pipe', 'pipe'],
      }),
    );
  });
  await Promise.all(workers.map((w) => w.until('decided by Redis', (s) => s.redisAskedMs > 0, 20_000)));
  return workers;
}

/**
 * decidedByRedisSince resolves once every key of every worker has been decided by Redis in a
 * decision asked after `epochMs` (on a cluster: the keys of a failed master's slots too). The
 * bound is only there so a test that never recovers fails rather than hangs.
 */
export function decidedByRedisSince(workers: readonly Worker[], epochMs: number, withinMs = 20_000): Promise<void> {
  return Promise.all(
    workers.map((w) =>
      w.until('decided by Redis again on every key', (s) => s.everyKeyRedisAskedMs > epochMs, withinMs),
    ),
  ).then(() => undefined);
}

/** nowMs returns epoch ms on the workers' clock (`performance.timeOrigin + performance.now()`). */
export function nowMs(): number {
  return performance.timeOrigin + performance.now();
}
