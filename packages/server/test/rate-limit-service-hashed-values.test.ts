/**
 * The decision service of `floodgate serve` hashes descriptor values before they name anything:
 * an API key asked about through `/v1/auth` (nginx's door), `POST /json` and gRPC (Envoy's) is
 * found in no Redis key, log line, `/metrics` label nor dashboard snapshot; a value the config
 * spells out (`path=/api/login`) stays readable; two gateways with one secret share one counter.
 * `floodgate ratelimit` behind the nginx example, on a real Redis, does the same.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { startRedisServer, type RedisServers } from '../../floodgate/test/support/redis-server.js';
import { fixturePath, GrpcRls, postJson, rl } from './ratelimit/support.js';
import { RlqsClient } from './ratelimit/rlqs-support.js';
import { startServiceProcess, type ServiceProcess } from './ratelimit/processes.js';
import { startGateway, type GatewayProcess } from './support/gateway-process.js';
import { call } from './support/http.js';
import { EXAMPLE_DIR, NGINX_MISSING, exampleConf, startNginx, type RunningNginx } from './support/nginx.js';
import { closedPort } from './support/ports.js';
import { startUpstream, type TestUpstream } from './support/upstream.js';

const TOKEN = 'admin-token-for-the-hashed-values-tests';
const API_KEY = 'secret-key-8564';
const ENV = { FG_TEST_ADMIN_TOKEN: TOKEN, FG_TEST_KEYS_SECRET: 'one-deployment-secret' };

// detailed_metric asks for the value in the metric label: it gets the hash.
const DESCRIPTORS = `domain: nginx
descriptors:
  - key: api_key
    detailed_metric: true
    rate_limit: { unit: hour, requests_per_unit: 6, name: per-key }
  - key: path
    value: /api/login
    descriptors:
      - key: remote_address
        rate_limit: { unit: hour, requests_per_unit: 10, name: login }
`;

function config(redisPort: number, file: string): string {
  return `
admin: { tokenEnv: FG_TEST_ADMIN_TOKEN }
store: { type: redis, url: "redis://127.0.0.1:${redisPort}", prefix: "fg-hv:" }
keys: { secretEnv: FG_TEST_KEYS_SECRET }
rateLimitService:
  grpc: { port: 0 }
  http: { port: 0 }
  descriptors: [${JSON.stringify(file)}]
`;
}

async function auth(port: number, descriptor: string): Promise<number> {
  const reply = await call(`http://127.0.0.1:${port}/v1/auth`, {
    headers: { 'floodgate-domain': 'nginx', 'floodgate-descriptor-1': descriptor },
  });
  return reply.status;
}

describe('descriptor values hashed in the decision service of floodgate serve', () => {
  let redis: RedisServers;
  let client: Redis;
  let dir: string;
  const gateways: GatewayProcess[] = [];
  const grpc: GrpcRls[] = [];

  before(async () => {
    redis = await startRedisServer();
    client = new Redis({ host: '127.0.0.1', port: redis.ports[0]!, lazyConnect: true });
    await client.connect();
    dir = await mkdtemp(join(tmpdir(), 'floodgate-hashed-values-'));
    const file = join(dir, 'ratelimit.yaml');
    await writeFile(file, DESCRIPTORS);
    for (let i = 0; i < 2; i++) {
      const gw = await startGateway(config(redis.ports[0]!, file), { env: ENV });
      gateways.push(gw);
      await gw.waitForLog('ready');
      grpc.push(new GrpcRls(gw.logs.find((l) => l.msg === 'listening')!.grpcPort as number));
    }
  });
  after(async () => {
    for (const c of grpc) c.close();
    await Promise.all(gateways.map((gw) => gw.stop()));
    client?.disconnect();
    await redis?.stop();
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  const httpPort = (gw: GatewayProcess): number => gw.logs.find((l) => l.msg === 'listening')!.httpPort as number;

  it('through /v1/auth, /json and gRPC, on two gateways, one hashed counter and no raw key anywhere', async () => {
    const [a, b] = gateways as [GatewayProcess, GatewayProcess];
    const statuses: number[] = [];
    statuses.push(await auth(httpPort(a), `api_key=${API_KEY}`));
    statuses.push(await auth(httpPort(b), `api_key=${API_KEY}`));
    const json = await postJson(httpPort(a), '/json', rl('nginx', [[['api_key', API_KEY]]]));
    statuses.push(json.status === 200 ? 204 : json.status);
    for (const c of grpc)
      statuses.push((await c.call(rl('nginx', [[['api_key', API_KEY]]]))).overall_code === 'OK' ? 204 : 429);
    statuses.push(await auth(httpPort(b), `api_key=${API_KEY}`));
    statuses.push(await auth(httpPort(a), `api_key=${API_KEY}`));
    // Six admitted of the key's six an hour, the seventh refused: every door counts one counter.
    assert.deepEqual(statuses, [204, 204, 204, 204, 204, 204, 403]);
    const headers = {
      'floodgate-domain': 'nginx',
      'floodgate-descriptor-2': 'path=/api/login',
      'floodgate-descriptor-2-2': 'remote_address=192.0.2.7',
    };
    assert.equal((await call(`http://127.0.0.1:${httpPort(a)}/v1/auth`, { headers })).status, 204);

    const keys = await client.keys('*');
    assert.ok(keys.length > 0, 'the service keeps its counters in Redis');
    for (const k of keys) assert.ok(!k.includes(API_KEY), `a raw API key names a Redis key: ${k}`);
    assert.ok(
      keys.some((k) => k.includes('api_key=#')),
      `the key's counter is named by its hash: ${keys.join(', ')}`,
    );
    // The config spells /api/login out: no secret, kept readable; the address it pairs with is hashed.
    const login = keys.filter((k) => k.includes('path=/api/login'));
    assert.ok(login.length > 0, `the login counter keeps its path: ${keys.join(', ')}`);
    for (const k of login) assert.ok(!k.includes('192.0.2.7'), k);

    for (const gw of gateways) {
      const metrics = (await call(gw.adminUrl('/metrics'))).body;
      assert.ok(!metrics.includes(API_KEY), 'no raw API key in /metrics');
      assert.match(metrics, /descriptor="api_key_#/, 'detailed_metric labels carry the hash');
      const snapshot = await call(gw.adminUrl('/dashboard/snapshot.json'), {
        headers: { authorization: `Bearer ${TOKEN}` },
      });
      assert.equal(snapshot.status, 200);
      assert.ok(!snapshot.body.includes(API_KEY), 'no raw API key on the dashboard');
      assert.ok(!JSON.stringify(gw.logs).includes(API_KEY), 'no raw API key in the log');
    }
  });
});

describe('the decision service of floodgate serve without a key secret', () => {
  it('warns at start that its values are hashed without one', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'floodgate-unkeyed-'));
    const file = join(dir, 'ratelimit.yaml');
    await writeFile(file, DESCRIPTORS);
    const gw = await startGateway(`rateLimitService:\n  http: { port: 0 }\n  descriptors: [${JSON.stringify(file)}]\n`);
    try {
      await gw.waitForLog(
        'config warning: identity values (API keys, JWT claims, query tokens, descriptor values) are hashed in store keys without a secret: a guessable value (a user id) can be recovered from its key by hashing candidates',
      );
    } finally {
      await gw.stop();
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('descriptor values hashed by floodgate ratelimit behind the nginx example', { skip: NGINX_MISSING }, () => {
  let redis: RedisServers;
  let client: Redis;
  let upstream: TestUpstream;
  let service: ServiceProcess;
  let nginx: RunningNginx;

  before(async () => {
    redis = await startRedisServer();
    client = new Redis({ host: '127.0.0.1', port: redis.ports[0]!, lazyConnect: true });
    await client.connect();
    upstream = await startUpstream();
    // The child inherits this process's environment: the secret reaches it by name only.
    process.env.FG_TEST_RATELIMIT_SECRET = 'one-deployment-secret-too';
    service = await startServiceProcess([
      '--config',
      join(EXAMPLE_DIR, 'ratelimit.yaml'),
      '--redis',
      `127.0.0.1:${redis.ports[0]!}`,
      '--key-secret-env',
      'FG_TEST_RATELIMIT_SECRET',
      '--metrics-port',
      '0',
    ]);
    const port = await closedPort();
    nginx = await startNginx(exampleConf({ nginx: port, floodgate: service.httpPort, app: upstream.port }), port);
  });
  after(async () => {
    await nginx?.stop();
    await service?.stop();
    await upstream?.close();
    client?.disconnect();
    await redis?.stop();
    delete process.env.FG_TEST_RATELIMIT_SECRET;
  });

  it('counts the key under its hash: Redis, /metrics and stderr never see it', async () => {
    const replies = [];
    for (let i = 0; i < 3; i++)
      replies.push(await call(`http://127.0.0.1:${nginx.port}/api/items`, { headers: { 'x-api-key': API_KEY } }));
    assert.deepEqual(
      replies.map((r) => r.status),
      [200, 200, 200],
    );
    assert.match(String(replies[2]!.headers.ratelimit), /^"per-key";r=97;/, 'one counter for the key');
    const keys = await client.keys('*');
    assert.ok(
      keys.some((k) => k.includes('api_key=#')),
      `the key's counter is named by its hash: ${keys.join(', ')}`,
    );
    for (const k of keys) assert.ok(!k.includes(API_KEY), `a raw API key names a Redis key: ${k}`);
    const metrics = (await call(`http://127.0.0.1:${service.metricsPort!}/metrics`)).body;
    assert.ok(!metrics.includes(API_KEY), 'no raw API key in /metrics');
    assert.ok(!service.stderr().includes(API_KEY), 'no raw API key in the log');
    assert.ok(!service.stderr().includes('without a secret'), 'no warning: a secret is set');
  });
});

describe("RLQS bucket values hashed in floodgate ratelimit's Redis keys", () => {
  let redis: RedisServers;
  let client: Redis;
  let service: ServiceProcess;
  let rlqs: RlqsClient | undefined;

  before(async () => {
    redis = await startRedisServer();
    client = new Redis({ host: '127.0.0.1', port: redis.ports[0]!, lazyConnect: true });
    await client.connect();
    process.env.FG_TEST_RLQS_SECRET = 'one-deployment-secret-for-rlqs';
    service = await startServiceProcess([
      '--config',
      fixturePath('rlqs-shared.yaml'),
      '--redis',
      `127.0.0.1:${redis.ports[0]!}`,
      '--key-secret-env',
      'FG_TEST_RLQS_SECRET',
    ]);
  });
  after(async () => {
    rlqs?.close();
    await service?.stop();
    client?.disconnect();
    await redis?.stop();
    delete process.env.FG_TEST_RLQS_SECRET;
  });

  it('grants the bucket, and no Redis key names its API key', async () => {
    rlqs = new RlqsClient(service.grpcPort);
    const bucket = { name: 'api', api_key: API_KEY };
    rlqs.report('edge', [bucket], 10);
    await rlqs.until(() => rlqs!.latestOf(bucket) !== undefined, 'an answer for the bucket');
    const keys = await client.keys('*');
    assert.ok(
      keys.some((k) => k.includes('rlqs:{b:')),
      `the bucket is kept on Redis: ${keys.join(', ')}`,
    );
    for (const k of keys) assert.ok(!k.includes(API_KEY), `a raw API key names a Redis key: ${JSON.stringify(k)}`);
  });
});
