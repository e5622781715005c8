/**
 * What a store outage leaves in the gateway's log, with a real redis-server under a gateway
 * process: one line when it goes away (hung by SIGSTOP, or killed), one when it is back, and the
 * client's connection errors thinned to a line per 10 s instead of one per reconnection.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startRedisServer, type RedisServers } from '../../floodgate/test/support/redis-server.js';
import { startGateway, type GatewayProcess } from './support/gateway-process.js';
import { call } from './support/http.js';
import { startUpstream, type TestUpstream } from './support/upstream.js';

describe('store outages in the log (a gateway process on a real Redis)', () => {
  let redis: RedisServers;
  let upstream: TestUpstream;
  let gw: GatewayProcess;

  before(async () => {
    [redis, upstream] = await Promise.all([startRedisServer(), startUpstream()]);
    gw = await startGateway(`
store: { type: redis, url: "redis://127.0.0.1:${redis.ports[0]!}", timeoutMs: 200 }
routes:
  - name: api
    upstream: ${upstream.origin}
    rules:
      - name: per-ip
        policy: { algorithm: fixedWindow, limit: 100000, windowMs: 60000 }
`);
    await gw.waitForLog('ready');
  });

  after(async () => {
    await gw?.stop();
    await upstream?.close();
    await redis?.stop();
  });

  /** Sends requests until `msg` is logged after line `from`; decisions are what tell the circuit. */
  async function trafficUntil(msg: string, from: number): Promise<void> {
    const seen = gw.waitForLog(msg, from, 15_000);
    let done = false;
    void seen.then(() => (done = true)).catch(() => (done = true));
    while (!done) {
      await call(gw.url('/x')).catch(() => undefined);
      await new Promise((r) => setTimeout(r, 20));
    }
    await seen;
  }

  const lines = (msg: string, from: number): number => gw.logs.slice(from).filter((l) => l.msg === msg).length;

  it('a hung Redis: one "store away" line naming what decides meanwhile, one "store back" once it answers', async () => {
    const from = gw.logs.length;
    redis.signal(0, 'SIGSTOP');
    try {
      await trafficUntil(
        'store away: its circuit opened; decisions follow onError "local" until it answers again',
        from,
      );
    } finally {
      redis.signal(0, 'SIGCONT');
    }
    await trafficUntil('store back: deciding on it again', from);
    const away = gw.logs.slice(from).find((l) => String(l.msg).startsWith('store away'))!;
    assert.equal(away.onError, 'local');
    const back = gw.logs.slice(from).find((l) => l.msg === 'store back: deciding on it again')!;
    assert.ok(typeof back.awayMs === 'number' && back.awayMs > 0);
    assert.equal(lines('store back: deciding on it again', from), 1);
  });

  it('a killed Redis: one away line, one back line, and its connection errors thinned to one line', async () => {
    const from = gw.logs.length;
    await redis.kill(0);
    await trafficUntil('store away: its circuit opened; decisions follow onError "local" until it answers again', from);
    // ioredis tries to reconnect every 100 ms: 2 s away is some 20 errors, one line.
    await new Promise((r) => setTimeout(r, 2000));
    await redis.restart(0);
    await trafficUntil('store back: deciding on it again', from);
    assert.equal(lines('store connection error', from), 1);
    const back = gw.logs.slice(from).find((l) => l.msg === 'store back: deciding on it again')!;
    assert.ok((back.connectionErrors as number) >= 5, `connection errors counted: ${String(back.connectionErrors)}`);
    assert.equal(
      gw.logs.slice(from).filter((l) => String(l.msg).startsWith('store away')).length,
      1,
      'one away line for the outage',
    );
  });
});
