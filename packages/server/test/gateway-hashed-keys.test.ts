/**
 * Identity values hashed in store key names, against gateway processes on a real Redis: no raw
 * API key in any Redis key name nor on the dashboard; two gateways with one secret (and one
 * restarted) agree on every key; client addresses stay readable; `keys: { hash: false }` is the
 * operator opting into raw keys.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { startRedisServer, type RedisServers } from '../../floodgate/test/support/redis-server.js';
import { startGateway, type GatewayProcess } from './support/gateway-process.js';
import { call } from './support/http.js';
import { startUpstream, type TestUpstream } from './support/upstream.js';

const TOKEN = 'admin-token-for-the-hashed-keys-tests';
const SECRET = 'a-deployment-secret-for-key-hashing';
const API_KEY = 'sk_live_raw_value_0123456789';
const ENV = { FG_TEST_ADMIN_TOKEN: TOKEN, FG_TEST_KEYS_SECRET: SECRET };

function config(redisPort: number, upstream: string, prefix: string, keys: string): string {
  // Token buckets that refill too slowly to matter within a test (one token per 28 hours).
  return `
admin: { tokenEnv: FG_TEST_ADMIN_TOKEN }
store: { type: redis, url: "redis://127.0.0.1:${redisPort}", prefix: "${prefix}" }
keys: ${keys}
routes:
  - name: api
    match: { path: /api/* }
    upstream: ${upstream}
    rules:
      - name: per-key
        policy: { algorithm: tokenBucket, capacity: 4, refillPerSecond: 0.00001 }
        key: { type: header, name: x-api-key }
  - name: open
    match: { path: /open/* }
    upstream: ${upstream}
    rules:
      - name: per-ip
        policy: { algorithm: tokenBucket, capacity: 4, refillPerSecond: 0.00001 }
`;
}

const withKey = { headers: { 'x-api-key': API_KEY } };

async function statuses(gw: GatewayProcess, path: string, n: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push((await call(gw.url(path), withKey)).status);
  return out;
}

async function snapshot(gw: GatewayProcess): Promise<string> {
  const reply = await call(gw.adminUrl('/dashboard/snapshot.json'), { headers: { authorization: `Bearer ${TOKEN}` } });
  assert.equal(reply.status, 200);
  return reply.body;
}

describe('identity values hashed in store keys', () => {
  let redis: RedisServers;
  let client: Redis;
  let upstream: TestUpstream;
  const running: GatewayProcess[] = [];
  const start = async (prefix: string, keys: string): Promise<GatewayProcess> => {
    const gw = await startGateway(config(redis.ports[0]!, upstream.origin, prefix, keys), { env: ENV });
    running.push(gw);
    await gw.waitForLog('ready');
    return gw;
  };
  const keysUnder = async (prefix: string): Promise<string[]> => (await client.keys(`${prefix}*`)).sort();

  before(async () => {
    redis = await startRedisServer();
    client = new Redis({ host: '127.0.0.1', port: redis.ports[0]!, lazyConnect: true });
    await client.connect();
    upstream = await startUpstream();
  });
  after(async () => {
    await Promise.all(running.map((gw) => gw.stop()));
    client?.disconnect();
    await upstream?.close();
    await redis?.stop();
  });

  it('names no Redis key and shows no dashboard entry by the raw key; gateways sharing the secret, and a restarted one, share its count', async () => {
    const prefix = `fg-hashed-${process.pid}:`;
    const keys = '{ secretEnv: FG_TEST_KEYS_SECRET }';
    const a = await start(prefix, keys);
    const b = await start(prefix, keys);
    assert.deepEqual(await statuses(a, '/api/x', 3), [200, 200, 200]);
    assert.deepEqual(await statuses(b, '/api/x', 2), [200, 429], 'the second gateway counts on the same key');
    assert.deepEqual(await statuses(a, '/open/x', 1), [200]);

    const names = await keysUnder(prefix);
    assert.ok(names.length > 0);
    assert.equal(names.filter((n) => n.includes(API_KEY) || n.includes('sk_live')).length, 0, names.join('\n'));
    assert.ok(
      names.some((n) => /\{api\/per-key\/header:x-api-key:#[A-Za-z0-9_-]{22}\}$/.test(n)),
      `a key names the hash: ${names.join(', ')}`,
    );
    assert.ok(
      names.some((n) => n.endsWith('{open/per-ip/ip:127.0.0.1}')),
      `client addresses stay readable: ${names.join(', ')}`,
    );
    for (const gw of [a, b]) {
      const board = await snapshot(gw);
      assert.ok(board.includes('header:x-api-key:#'), 'the dashboard shows the hash');
      assert.ok(!board.includes(API_KEY), 'the dashboard never shows the raw key');
    }

    assert.equal(await a.stop(), 0);
    const restarted = await start(prefix, keys);
    assert.deepEqual(await statuses(restarted, '/api/x', 1), [429], 'after a restart the key is the same one');
    const admin = await call(
      restarted.adminUrl(`/admin/keys?route=api&rule=per-key&identity=header:x-api-key:${API_KEY}`),
      { headers: { authorization: `Bearer ${TOKEN}` } },
    );
    assert.equal(JSON.parse(admin.body).state.remaining, 0, 'the admin API finds the key by the raw identity');
    assert.ok(!(JSON.parse(admin.body).key as string).includes(API_KEY));
  });

  it('another secret makes other keys: gateways that do not share it do not share counts', async () => {
    const prefix = `fg-hashed-other-${process.pid}:`;
    const mine = await start(prefix, '{ secretEnv: FG_TEST_KEYS_SECRET }');
    const theirs = await start(prefix, '{ secret: "another-secret-of-16-or-more" }');
    assert.deepEqual(await statuses(mine, '/api/x', 4), [200, 200, 200, 200]);
    assert.deepEqual(await statuses(theirs, '/api/x', 1), [200]);
    assert.equal((await keysUnder(prefix)).filter((n) => n.includes('{api/per-key/')).length, 2);
  });

  it('keeps raw keys when the operator opts in with hash: false', async () => {
    const prefix = `fg-raw-${process.pid}:`;
    const gw = await start(prefix, '{ hash: false }');
    assert.deepEqual(await statuses(gw, '/api/x', 5), [200, 200, 200, 200, 429]);
    const names = await keysUnder(prefix);
    assert.ok(
      names.some((n) => n.endsWith(`{api/per-key/header:x-api-key:${API_KEY}}`)),
      names.join(', '),
    );
    assert.ok((await snapshot(gw)).includes(API_KEY));
  });
});
