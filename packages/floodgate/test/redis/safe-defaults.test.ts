import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Redis } from 'ioredis';
import { Limiter, gcra, type Decision } from '../../src/index.js';
import { RedisStore, ioredisAdapter } from '../../src/stores/redis/index.js';
import { startRedisServer, type RedisServers } from '../support/redis-server.js';

// The Redis snippet of docs/library.md (once the README's), as pasted (every store option at its default), with
// a real ioredis client started before its server accepts connections: no call rejects, no
// rejection goes unhandled, and Redis decides once it is up.

let servers: RedisServers;
const unhandled: unknown[] = [];
const onUnhandled = (reason: unknown): void => void unhandled.push(reason);

before(async () => {
  servers = await startRedisServer();
  process.on('unhandledRejection', onUnhandled);
});

after(async () => {
  process.off('unhandledRejection', onUnhandled);
  await servers.stop();
});

/** settled waits for a macrotask, so that a rejection nobody handled has been reported. */
function settled(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

describe('the default failure policy is the bounded local fallback, and the README snippet is safe at start', () => {
  test('a client still connecting to a port nobody listens on yet: decisions fall back locally, then Redis decides', async () => {
    await servers.kill(0); // the port is closed: the client keeps trying to connect
    const client = new Redis({ host: '127.0.0.1', port: servers.ports[0]!, retryStrategy: () => 20 });
    client.on('error', () => {}); // ioredis reports each refused connection; the store reports its own outcome
    const store = new RedisStore({ adapter: ioredisAdapter(client) });
    const limiter = new Limiter({ policy: gcra({ rate: 100, periodMs: 60_000, maxBurst: 20 }), store });
    try {
      const early = await Promise.all(Array.from({ length: 20 }, (_, i) => limiter.consume(`user:${i % 3}`)));
      // One process seen on the store (it never answered): the local share is the whole limit.
      assert.ok(
        early.every((d) => d.allowed && d.reason === 'fallback'),
        early.map((d) => d.reason).join(','),
      );
      await servers.restart(0);
      let healthy: Decision | undefined;
      // Bounded: the client reconnects within its 20 ms retry, and the circuit probes every 250 ms.
      for (let i = 0; i < 100 && healthy === undefined; i++) {
        const d = await limiter.consume('user:0');
        if (d.reason === 'ok') healthy = d;
        else await new Promise((resolve) => setTimeout(resolve, 50));
      }
      assert.ok(healthy !== undefined, 'Redis decides once it accepts connections');
      assert.equal(healthy.limit, 21);
    } finally {
      client.disconnect();
    }
    await settled();
    assert.deepEqual(unhandled, []);
  });

  test('calls made on a client still connecting to a live server: every one resolves, none rejects', async () => {
    const client = new Redis({ host: '127.0.0.1', port: servers.ports[0]! });
    const store = new RedisStore({ adapter: ioredisAdapter(client), prefix: 'start:' });
    const limiter = new Limiter({ policy: gcra({ rate: 100, periodMs: 60_000, maxBurst: 20 }), store });
    try {
      const results = await Promise.allSettled(Array.from({ length: 50 }, () => limiter.consume('user:a')));
      assert.ok(
        results.every((r) => r.status === 'fulfilled'),
        'no call rejects',
      );
      for (const r of results) {
        if (r.status === 'fulfilled')
          assert.ok(
            r.value.reason === 'ok' || r.value.reason === 'fallback' || r.value.reason === 'limit',
            r.value.reason,
          );
      }
    } finally {
      client.disconnect();
    }
    await settled();
    assert.deepEqual(unhandled, []);
  });
});
