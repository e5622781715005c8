import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { FloodgateError } from '../../src/core/errors.js';
import {
  RedisSemaphore,
  SEMAPHORE_SCRIPT,
  ioredisAdapter,
  type RedisAdapter,
  type RedisSemaphoreOptions,
} from '../../src/redis.js';
import { useRedis } from './setup.js';

const get = useRedis();
let names = 0;

/** semaphores returns `count` semaphores sharing one new name: as if each ran in its own process. */
function semaphores(count: number, options: Partial<RedisSemaphoreOptions> = {}): RedisSemaphore[] {
  const name = `t${names++}`;
  return Array.from(
    { length: count },
    () => new RedisSemaphore({ adapter: ioredisAdapter(get().client), name, permits: 1, leaseMs: 10_000, ...options }),
  );
}

function one(options: Partial<RedisSemaphoreOptions> = {}): RedisSemaphore {
  return semaphores(1, options)[0]!;
}

function code(c: string): (error: unknown) => boolean {
  return (error) => error instanceof FloodgateError && error.code === c;
}

/** delayed wraps an adapter so that every script reaches Redis `delayMs` late. */
function delayed(adapter: RedisAdapter, delayMs: number): RedisAdapter {
  return {
    cluster: adapter.cluster,
    evalsha: (sha1, keys, args) => sleep(delayMs).then(() => adapter.evalsha(sha1, keys, args)),
    eval: (script, keys, args) => sleep(delayMs).then(() => adapter.eval(script, keys, args)),
  };
}

describe('RedisSemaphore script', () => {
  // Changing the script changes its SHA1: this pin is updated on purpose, never by accident.
  test('has its pinned SHA1, and Redis computes the same', async () => {
    assert.equal(SEMAPHORE_SCRIPT.sha1, '7255d124bb1e987132e72152b7b28b71d36c4bef');
    assert.equal(SEMAPHORE_SCRIPT.sha1, createHash('sha1').update(SEMAPHORE_SCRIPT.source).digest('hex'));
    assert.equal(await get().client.script('LOAD', SEMAPHORE_SCRIPT.source), SEMAPHORE_SCRIPT.sha1);
  });

  test('one hash-tagged sorted set, scored by lease end on the server clock, with the TTL of the latest lease', async () => {
    const [a] = semaphores(1, { name: 'layout', permits: 2, leaseMs: 5000 });
    const p = await a!.acquire();
    const [seconds] = await get().client.time();
    const members = await get().client.zrange('floodgate:semaphore:{layout}', '0', '-1', 'WITHSCORES');
    assert.equal(members[0], p.id);
    const leaseEndMs = Number(members[1]);
    assert.ok(
      Math.abs(leaseEndMs - 5000 - Number(seconds) * 1000) < 1500,
      `lease end ${leaseEndMs} on the server's clock`,
    );
    const pttlMs = await get().client.pttl('floodgate:semaphore:{layout}');
    assert.ok(pttlMs > 4000 && pttlMs <= 5000, `PTTL ${pttlMs}`);
    assert.equal(await p.release(), true);
  });
});

describe('RedisSemaphore permits', () => {
  test('grants up to permits across processes, then a one-try caller gets WAIT_TIMEOUT', async () => {
    const [a, b] = semaphores(2, { permits: 2 });
    const p1 = await a!.acquire();
    const p2 = await b!.acquire();
    assert.notEqual(p1.id, p2.id);
    await assert.rejects(a!.acquire({ maxWaitMs: 0 }), code('WAIT_TIMEOUT'));
    assert.equal(await a!.holders(), 2);
    assert.equal(await b!.available(), 0);
    await p2.release();
    assert.equal(await a!.available(), 1);
    await p1.release();
  });

  test('release is idempotent: a second release frees nothing more', async () => {
    const sem = one({ permits: 2 });
    const [p1, p2] = await Promise.all([sem.acquire(), sem.acquire()]);
    const first = p1.release();
    assert.equal(p1.release(), first);
    assert.equal(await first, true);
    assert.equal(await p1.release(), true);
    assert.equal(p1.state, 'released');
    assert.equal(await sem.holders(), 1, 'the other permit is still held');
    p2[Symbol.dispose]();
    await sleep(50);
    assert.equal(await sem.holders(), 0);
  });

  test('a holder that never releases is reclaimed after leaseMs; its late release frees nothing', async () => {
    const [dead, live] = semaphores(2, { leaseMs: 300 });
    const lost = await dead!.acquire();
    const startMs = Date.now();
    const next = await live!.acquire({ maxWaitMs: 3000 });
    assert.ok(Date.now() - startMs >= 200, `granted after ${Date.now() - startMs} ms, before the lease ended`);
    assert.equal(await lost.release(), false);
    assert.equal(lost.state, 'reclaimed');
    assert.equal(await live!.holders(), 1, "the late release did not free the new holder's permit");
    assert.equal(await next.release(), true);
  });

  test('renew extends a held lease, and reports a reclaimed one', async () => {
    const [a, b] = semaphores(2, { leaseMs: 300 });
    const p = await a!.acquire();
    await sleep(200);
    assert.equal(await p.renew(), true);
    await sleep(200); // 400 ms after the grant: held only thanks to the renewal
    await assert.rejects(b!.acquire({ maxWaitMs: 0 }), code('WAIT_TIMEOUT'));
    await sleep(350);
    assert.equal(await p.renew(), false);
    assert.equal(p.state, 'reclaimed');
    assert.equal(await p.release(), false);
    const after = await b!.acquire({ maxWaitMs: 0 });
    assert.equal(await after.renew(), true);
    await after.release();
    assert.equal(await after.renew(), false, 'a released permit is not renewed');
  });
  test('a lease that ended is neither renewed nor released, even before any acquire swept it', async () => {
    const sem = one({ permits: 3, leaseMs: 300 });
    const [p1, p2] = await Promise.all([sem.acquire(), sem.acquire()]);
    await sleep(150);
    const live = await sem.acquire(); // its lease keeps the key alive past p1's and p2's
    await sleep(200);
    assert.equal(await p1.renew(), false);
    assert.equal(await p2.release(), false);
    assert.deepEqual([p1.state, p2.state], ['reclaimed', 'reclaimed']);
    assert.equal(await live.release(), true);
    assert.equal(await sem.holders(), 0);
  });
});

describe('RedisSemaphore waiting', () => {
  test('callers of one process are served first in, first out, woken by a local release (not the poll)', async () => {
    const sem = one({ pollMs: 5000 });
    const held = await sem.acquire();
    const order: number[] = [];
    const waits = [0, 1, 2].map((i) => sem.acquire({ maxWaitMs: 3000 }).then((p) => (order.push(i), p)));
    await sleep(30);
    assert.equal(sem.waiting, 3);
    const startMs = Date.now();
    await held.release();
    for (let i = 0; i < 3; i++) {
      const p = await waits[i]!;
      await p.release();
    }
    assert.deepEqual(order, [0, 1, 2]);
    assert.ok(Date.now() - startMs < 1000, 'each waiter was woken by the release before it, not by the 5 s poll');
  });

  test('maxWaitMs ends a wait with WAIT_TIMEOUT; an abort with ABORTED and the reason as cause', async () => {
    const sem = one();
    const held = await sem.acquire();
    const startMs = Date.now();
    await assert.rejects(sem.acquire({ maxWaitMs: 150 }), code('WAIT_TIMEOUT'));
    assert.ok(Date.now() - startMs >= 140);
    const controller = new AbortController();
    const waiting = sem.acquire({ signal: controller.signal });
    setTimeout(() => controller.abort(new Error('shutting down')), 50);
    await assert.rejects(waiting, (e: unknown) => code('ABORTED')(e) && (e as Error).cause instanceof Error);
    await assert.rejects(sem.acquire({ signal: AbortSignal.abort() }), code('ABORTED'));
    assert.equal(sem.waiting, 0);
    await held.release();
    assert.equal(await sem.holders(), 0, 'no waiter that gave up holds a permit');
  });

  test('maxQueue bounds the callers waiting in this process; 0 means try once, never wait', async () => {
    const sem = one({ maxQueue: 1 });
    const held = await sem.acquire();
    const first = sem.acquire({ maxWaitMs: 2000 });
    await assert.rejects(sem.acquire(), code('QUEUE_FULL'), 'refused after its try: one already waits');
    await assert.rejects(sem.acquire(), code('QUEUE_FULL'), 'refused at once');
    await held.release();
    await (await first).release();
    const [a, b] = semaphores(2, { maxQueue: 0 });
    const p = await a!.acquire();
    await assert.rejects(b!.acquire(), code('QUEUE_FULL'));
    await p.release();
  });

  test('a permit granted while its caller aborts goes to the next caller, or back to Redis', async () => {
    const sem = new RedisSemaphore({
      adapter: delayed(ioredisAdapter(get().client), 80),
      name: 'race',
      permits: 1,
      leaseMs: 10_000,
    });
    const controller = new AbortController();
    const gone = sem.acquire({ signal: controller.signal });
    const next = sem.acquire({ maxWaitMs: 3000 });
    await sleep(20); // the acquire script for `gone` is on its way
    controller.abort();
    await assert.rejects(gone, code('ABORTED'));
    const p = await next;
    assert.equal(await sem.holders(), 1);
    await p.release();
    const alone = new AbortController();
    const lost = sem.acquire({ signal: alone.signal });
    await sleep(20);
    alone.abort();
    await assert.rejects(lost, code('ABORTED'));
    await sleep(300);
    assert.equal(await sem.holders(), 0, 'nobody waited: the grant went back');
  });
});

describe('RedisSemaphore failures', () => {
  test('Redis errors reject every caller with STORE_ERROR; no answer with STORE_TIMEOUT', async () => {
    const failing: RedisAdapter = {
      cluster: false,
      evalsha: () => Promise.reject(new Error('ERR boom')),
      eval: () => Promise.reject(new Error('ERR boom')),
    };
    const broken = new RedisSemaphore({ adapter: failing, name: 'broken', permits: 2, leaseMs: 1000 });
    const results = await Promise.allSettled([broken.acquire(), broken.acquire(), broken.acquire({ maxWaitMs: 0 })]);
    for (const r of results) assert.ok(r.status === 'rejected' && code('STORE_ERROR')(r.reason), String(r.status));
    await assert.rejects(broken.holders(), code('STORE_ERROR'));
    const hanging: RedisAdapter = {
      cluster: false,
      evalsha: () => new Promise(() => undefined),
      eval: () => new Promise(() => undefined),
    };
    const hung = new RedisSemaphore({ adapter: hanging, name: 'hung', permits: 1, leaseMs: 1000, timeoutMs: 100 });
    const startMs = Date.now();
    const hungResults = await Promise.allSettled([hung.acquire(), hung.acquire({ maxWaitMs: 5000 })]);
    for (const r of hungResults) assert.ok(r.status === 'rejected' && code('STORE_TIMEOUT')(r.reason));
    assert.ok(Date.now() - startMs < 1000);
    assert.equal(hung.waiting, 0);
  });

  test('options are checked with INVALID_OPTION naming the option', () => {
    const adapter = ioredisAdapter(get().client);
    const bad: Array<[Partial<RedisSemaphoreOptions>, string]> = [
      [{ permits: 0 }, 'RedisSemaphore.permits'],
      [{ leaseMs: 0.5 }, 'RedisSemaphore.leaseMs'],
      [{ name: '' }, 'RedisSemaphore.name'],
      [{ prefix: 'a{b' }, 'RedisSemaphore.prefix'],
      [{ maxQueue: -1 }, 'RedisSemaphore.maxQueue'],
      [{ pollMs: 0 }, 'RedisSemaphore.pollMs'],
    ];
    for (const [options, option] of bad) {
      assert.throws(
        () => new RedisSemaphore({ adapter, name: 'x', permits: 1, leaseMs: 1000, ...options }),
        (e: unknown) => code('INVALID_OPTION')(e) && (e as FloodgateError).option === option,
      );
    }
  });
});
