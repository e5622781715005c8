import assert from 'node:assert/strict';
import { fork, type ChildProcess } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { Limiter, tokenBucket } from '../../src/index.js';
import { RedisStore, ioredisAdapter, type RedisAdapter } from '../../src/redis.js';
import { startRedisServer, type RedisServers } from '../support/redis-server.js';
import {
  policyOf,
  type Outcome,
  type ParentMessage,
  type PolicyKind,
  type WorkerArgs,
  type WorkerReply,
} from './acquire-policies.js';

// Distributed waiting: four processes, each with its own client and its own Limiter, call
// `acquire` many times at once on one key, on Redis's clock. Every process books its callers'
// slots in Redis and wakes them on its own timer; together they must keep to the one policy.
const WORKER = fileURLToPath(new URL('./acquire-worker.ts', import.meta.url));
const WORKERS = 4;
const PER_WORKER = 15; // 60 acquires in all
const TOTAL = WORKERS * PER_WORKER;
const CAPACITY = 5;
const PER_SECOND = 50; // one admission every 20 ms after the burst: (60 - 5) / 50 = 1.1 s of waiting
/**
 * How far a recorded admission time may be from its booked slot, either way: a process woken late
 * (a busy machine), the round trip between reading the local clock and Redis reading its own, and
 * whole-ms clocks. 60 ms is 3 admissions at 50/s: far below what any real over-admission looks
 * like (admitting everything at once exceeds the bound by 55; doubling the rate, by about 25).
 */
const JITTER_MS = 60;
const SLACK = (PER_SECOND * JITTER_MS) / 1000;

/**
 * excess returns the largest number of admissions any window [t_i, t_j] of `times` holds beyond
 * what the policy allows in it, CAPACITY + PER_SECOND * (t_j - t_i) / 1000, and that window.
 */
function excess(times: readonly number[]): { excess: number; from: number; to: number; count: number } {
  const sorted = [...times].sort((a, b) => a - b);
  let worst = { excess: -Infinity, from: 0, to: 0, count: 0 };
  for (let i = 0; i < sorted.length; i++) {
    for (let j = i; j < sorted.length; j++) {
      const count = j - i + 1;
      const over = count - CAPACITY - (PER_SECOND * (sorted[j]! - sorted[i]!)) / 1000;
      if (over > worst.excess) worst = { excess: over, from: sorted[i]!, to: sorted[j]!, count };
    }
  }
  return worst;
}

/** A forked worker process and its replies, one at a time. */
class Worker {
  private readonly child: ChildProcess;
  private readonly replies: WorkerReply[] = [];
  private waiting: ((reply: WorkerReply) => void) | undefined;
  private failure: Error | undefined;
  private onFailure: ((error: Error) => void) | undefined;

  constructor(args: WorkerArgs) {
    this.child = fork(WORKER, [JSON.stringify(args)], {
      execPath: process.execPath,
      execArgv: ['--conditions=floodgate-source', '--import', 'tsx'],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    this.child.on('message', (reply: WorkerReply) => {
      const waiting = this.waiting;
      this.waiting = undefined;
      if (waiting === undefined) this.replies.push(reply);
      else waiting(reply);
    });
    this.child.on('exit', (code, signal) => {
      if (code === 0) return;
      this.failure = new Error(`acquire worker ${String(this.child.pid)} exited with ${String(code ?? signal)}`);
      this.onFailure?.(this.failure);
    });
  }

  /** next resolves to the worker's next reply, or rejects when the worker dies first. */
  next(): Promise<WorkerReply> {
    const queued = this.replies.shift();
    if (queued !== undefined) return Promise.resolve(queued);
    if (this.failure !== undefined) return Promise.reject(this.failure);
    return new Promise((resolve, reject) => {
      this.waiting = resolve;
      this.onFailure = reject;
    });
  }

  send(message: ParentMessage): void {
    this.child.send(message);
  }

  /** stop asks the worker to exit and resolves once it has; it is killed (by pid) if it hangs. */
  async stop(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => this.child.once('exit', () => resolve()));
    if (this.child.connected) this.send({ type: 'exit' });
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(timer);
  }
}

describe('Limiter.acquire across processes on one Redis', () => {
  let servers: RedisServers;
  let client: Redis;
  let store: RedisStore;
  const workers: Worker[] = [];
  const prefix = `acquire-procs-${Date.now()}:`;

  before(async () => {
    servers = await startRedisServer();
    client = new Redis({ host: '127.0.0.1', port: servers.ports[0]! });
    store = new RedisStore({ adapter: ioredisAdapter(client), prefix, timeoutMs: 10_000 });
    const args: WorkerArgs = { port: servers.ports[0]!, prefix, capacity: CAPACITY, perSecond: PER_SECOND };
    for (let i = 0; i < WORKERS; i++) workers.push(new Worker(args));
    const ready = await Promise.all(workers.map((w) => w.next()));
    assert.ok(ready.every((r) => r.type === 'ready'));
  });

  after(async () => {
    await Promise.all(workers.map((w) => w.stop()));
    client?.disconnect();
    await servers?.stop();
  });

  /** Has every worker start PER_WORKER acquires on `key` at once; resolves to each worker's outcomes. */
  async function runAll(policy: PolicyKind, key: string, maxWaitMs: number): Promise<Outcome[][]> {
    for (const w of workers) w.send({ type: 'run', policy, key, count: PER_WORKER, maxWaitMs });
    const replies = await Promise.all(workers.map((w) => w.next()));
    return replies.map((reply) => {
      assert.equal(reply.type, 'done');
      return reply.type === 'done' ? reply.outcomes : [];
    });
  }

  test('the window check cannot hide an over-admission', () => {
    // Everything at once, or twice the rate after the burst, is far beyond SLACK.
    assert.ok(excess(Array.from({ length: TOTAL }, () => 1000)).excess > SLACK + 50);
    const doubled = Array.from(
      { length: TOTAL },
      (_, i) => 1000 + Math.max(0, i - CAPACITY + 1) * (1000 / PER_SECOND / 2),
    );
    assert.ok(excess(doubled).excess > SLACK + 20);
    // A schedule exactly on the policy is at 0 (the burst, then one every 20 ms).
    const exact = Array.from({ length: TOTAL }, (_, i) => 1000 + Math.max(0, i - CAPACITY + 1) * (1000 / PER_SECOND));
    assert.ok(Math.abs(excess(exact).excess) < 1e-9);
  });

  // Redis measures a booking's wait from its own TIME when the script runs, later than the request
  // was sent by its transit time; the waiting layer counts the wait from the answer's arrival, so a
  // waiter is never admitted before the slot Redis booked (this test once caught it 39 ms early).
  test('a waiter is not admitted before the slot Redis booked, however long the request took to get there', async () => {
    const DELAY_MS = 40;
    const inner = ioredisAdapter(client);
    const slow: RedisAdapter = {
      cluster: false,
      evalsha: (sha1, keys, args) => sleep(DELAY_MS).then(() => inner.evalsha(sha1, keys, args)),
      eval: (script, keys, args) => sleep(DELAY_MS).then(() => inner.eval(script, keys, args)),
    };
    const policy = tokenBucket({ capacity: 1, refillPerSecond: 10 }); // one admission per 100 ms
    const limiter = new Limiter({ policy, store: new RedisStore({ adapter: slow, prefix, timeoutMs: 10_000 }) });
    await limiter.acquire('slow-link'); // takes the token
    await limiter.acquire('slow-link'); // booked for when one has refilled
    // Admitted at (or after) its slot, the bucket is at most 100 ms from its next token.
    const next = await new Limiter({ policy, store }).peek('slow-link');
    assert.ok(
      next.retryAfterMs <= 100,
      `admitted ${next.retryAfterMs - 100} ms before its slot (the next token is ${next.retryAfterMs} ms away)`,
    );
  });

  for (const policy of ['token-bucket', 'gcra'] as const) {
    test(`${policy}: ${TOTAL} acquires from ${WORKERS} processes all pass, waiting their turn across processes`, async (t) => {
      const key = `wait-${policy}`;
      const perWorker = await runAll(policy, key, 20_000);
      const outcomes = perWorker.flat();
      assert.equal(outcomes.length, TOTAL);
      assert.deepEqual(
        outcomes.filter((o) => o.error !== undefined),
        [],
        'every acquire is admitted',
      );

      const times = outcomes.map((o) => o.settledAt);
      const start = Math.min(...outcomes.map((o) => o.startedAt));
      const end = Math.max(...times);
      const worst = excess(times);
      t.diagnostic(
        `${policy}: run ${end - start} ms (policy: at least ${((TOTAL - CAPACITY) * 1000) / PER_SECOND}); worst window ${worst.count} admitted in ${worst.to - worst.from} ms, ${worst.excess.toFixed(2)} over the policy (slack ${SLACK})`,
      );
      assert.ok(
        worst.excess <= SLACK,
        `${worst.count} admitted in [${worst.from}, ${worst.to}] (${worst.to - worst.from} ms): ${worst.excess.toFixed(2)} more than the policy allows`,
      );

      // Callers waited: the last admission is no sooner than the burst plus the rest at the rate.
      const leastRunMs = ((TOTAL - CAPACITY) * 1000) / PER_SECOND;
      assert.ok(
        end - start >= leastRunMs - JITTER_MS,
        `all ${TOTAL} admitted within ${end - start} ms; the policy needs ${leastRunMs}`,
      );
      // ...and were woken promptly: nobody waits long past the schedule.
      assert.ok(end - start <= leastRunMs + 2000, `the run took ${end - start} ms; the policy needs ${leastRunMs}`);
      // Each process's own callers waited too (at best it got the first PER_WORKER slots).
      for (const [i, own] of perWorker.entries()) {
        const longest = Math.max(...own.map((o) => o.settledAt - o.startedAt));
        assert.ok(
          longest >= ((PER_WORKER - CAPACITY) * 1000) / PER_SECOND - JITTER_MS,
          `worker ${i}'s longest wait was ${longest} ms`,
        );
      }
    });

    test(`${policy}: with a short maxWaitMs the rest fail with WAIT_TIMEOUT and are charged nothing`, async (t) => {
      const key = `timeout-${policy}`;
      const maxWaitMs = 150;
      const outcomes = (await runAll(policy, key, maxWaitMs)).flat();
      const admitted = outcomes.filter((o) => o.error === undefined);
      const refused = outcomes.filter((o) => o.error !== undefined);
      assert.deepEqual([...new Set(refused.map((o) => o.error))], ['WAIT_TIMEOUT']);

      // What the policy allows between the first arrival and the last arrival's deadline.
      const firstStart = Math.min(...outcomes.map((o) => o.startedAt));
      const lastStart = Math.max(...outcomes.map((o) => o.startedAt));
      const least = CAPACITY + Math.floor((PER_SECOND * maxWaitMs) / 1000);
      const most = CAPACITY + (PER_SECOND * (lastStart - firstStart + maxWaitMs + JITTER_MS)) / 1000;
      t.diagnostic(
        `${policy}: ${admitted.length} admitted, ${refused.length} refused; arrivals over ${lastStart - firstStart} ms; allowed ${least}..${most.toFixed(1)}`,
      );
      assert.ok(
        admitted.length >= least && admitted.length <= most,
        `${admitted.length} admitted; the policy allows ${least} to ${most.toFixed(1)}`,
      );
      const worst = excess(admitted.map((o) => o.settledAt));
      assert.ok(
        worst.excess <= SLACK,
        `${worst.count} admitted in ${worst.to - worst.from} ms: ${worst.excess.toFixed(2)} more than the policy allows`,
      );
      // maxWaitMs holds: an admitted caller was woken by its deadline, a refused one told by then.
      for (const o of outcomes)
        assert.ok(
          o.settledAt - o.startedAt <= maxWaitMs + 2 * JITTER_MS,
          `settled after ${o.settledAt - o.startedAt} ms`,
        );

      // The refused were charged nothing: the key is back to full one burst's worth of refill
      // after the last admission, not (refused / rate) later.
      const lastAdmitted = Math.max(...admitted.map((o) => o.settledAt));
      const refillMs = (CAPACITY * 1000) / PER_SECOND;
      const limiter = new Limiter({ policy: policyOf(policy, CAPACITY, PER_SECOND), store });
      const peekedAt = Date.now();
      const peeked = await limiter.peek(key, { cost: 0 });
      const fullAt = peekedAt + peeked.resetMs;
      t.diagnostic(
        `${policy}: full ${fullAt - lastAdmitted} ms after the last admission (policy: ${refillMs}; had the refused been charged: ${refillMs + (refused.length * 1000) / PER_SECOND})`,
      );
      if (peeked.resetMs > 0) {
        assert.ok(
          fullAt <= lastAdmitted + refillMs + JITTER_MS,
          `full ${fullAt - lastAdmitted} ms after the last admission, not about ${refillMs}`,
        );
      } else {
        // Already full when peeked: conclusive only while charging the refused would still show.
        assert.ok(
          peekedAt < lastAdmitted + refillMs + (refused.length * 1000) / PER_SECOND - JITTER_MS,
          'peeked too late to tell',
        );
      }
      // Redis read its clock between peekedAt and now: full by now + resetMs at the latest.
      await sleep(peeked.resetMs + 5);
      const full = await limiter.peek(key, { cost: 0 });
      assert.equal(full.remaining, CAPACITY);
      assert.equal(full.resetMs, 0);
    });
  }
});
