/**
 * The rate limit service inside `floodgate serve` follows its store's health as
 * `rateLimitService.healthFollowsStore` says: a gateway process on a real redis-server, killed and
 * restarted; and the rule itself, for every policy.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { startRedisServer } from '../../floodgate/test/support/redis-server.js';
import { servingWhen } from '../src/ratelimit/service/store-health.js';
import { postJson, rl } from './ratelimit/support.js';
import { startGateway } from './support/gateway-process.js';
import { startUpstream } from './support/upstream.js';

async function healthcheck(port: number): Promise<string> {
  const res = await fetch(`http://127.0.0.1:${port}/healthcheck`);
  return (await res.text()).trim();
}

/** Polls `probe` every 50 ms for up to 10 s. */
async function until(probe: () => Promise<boolean>): Promise<boolean> {
  for (let i = 0; i < 200; i++) {
    if (await probe()) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return false;
}

describe("the rate limit service's health inside floodgate serve", () => {
  it('servingWhen: never ignores the store, always follows it, auto follows it only when decisions fail', () => {
    const rows = (['never', 'always', 'auto'] as const).flatMap((policy) =>
      [true, false].map((fail) => [policy, fail, servingWhen(false, policy, fail), servingWhen(true, policy, fail)]),
    );
    assert.deepEqual(rows, [
      ['never', true, true, true],
      ['never', false, true, true],
      ['always', true, false, true],
      ['always', false, false, true],
      ['auto', true, false, true],
      ['auto', false, true, true],
    ]);
  });

  it('healthFollowsStore: always: NOT_SERVING while a real Redis is away, SERVING once it is back', async () => {
    const redis = await startRedisServer();
    const upstream = await startUpstream();
    const dir = await mkdtemp(join(tmpdir(), 'floodgate-rls-health-'));
    const descriptors = join(dir, 'ratelimit.yaml');
    await writeFile(
      descriptors,
      'domain: api\ndescriptors:\n  - key: tenant\n    rate_limit: { unit: hour, requests_per_unit: 100 }\n',
    );
    const gw = await startGateway(`
store: { type: redis, url: "redis://127.0.0.1:${redis.ports[0]!}", timeoutMs: 200 }
routes:
  - name: api
    upstream: ${upstream.origin}
rateLimitService:
  http: { port: 0 }
  descriptors: [${JSON.stringify(descriptors)}]
  healthFollowsStore: always
`);
    const port = gw.logs.find((l) => l.msg === 'listening')!.httpPort as number;
    // Decisions are what tell the store's circuit that Redis is gone or back.
    const decide = () => postJson(port, '/v1/decide', rl('api', [[['tenant', 'acme']]])).catch(() => undefined);
    try {
      await decide();
      assert.equal(await healthcheck(port), 'OK');
      await redis.kill(0);
      assert.ok(
        await until(async () => (await decide(), (await healthcheck(port)) === 'NOT_SERVING')),
        'NOT_SERVING while Redis is away',
      );
      await redis.restart(0);
      assert.ok(
        await until(async () => (await decide(), (await healthcheck(port)) === 'OK')),
        'serving once it is back',
      );
    } finally {
      await gw.stop();
      await upstream.close();
      await redis.stop();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
