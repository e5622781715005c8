/**
 * `floodgate ratelimit --on-store-error fail-closed` on a real Redis that the test kills and
 * restarts: while Redis is away every decision is refused, so `/healthcheck` answers NOT_SERVING
 * (as with `throw`), and SERVING again once it is back, like the gateway's `/readyz`.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startRedisServer, type RedisServers } from '../../../floodgate/test/support/redis-server.js';
import { startServiceProcess, type ServiceProcess } from './processes.js';
import { fixturePath, postJson, rl } from './support.js';

describe('floodgate ratelimit --on-store-error fail-closed: health follows Redis', () => {
  let redis: RedisServers;
  let service: ServiceProcess;

  before(async () => {
    redis = await startRedisServer();
    service = await startServiceProcess([
      '--config',
      fixturePath('example.yaml'),
      '--redis',
      `127.0.0.1:${redis.ports[0]!}`,
      '--on-store-error',
      'fail-closed',
      '--store-timeout-ms',
      '200',
    ]);
  });
  after(async () => {
    await service?.stop();
    await redis?.stop();
  });

  const health = async (): Promise<string> =>
    (await (await fetch(`http://127.0.0.1:${service.httpPort}/healthcheck`)).text()).trim();
  /** Asks decisions until `check` holds (15 s at most, a bound, not a measurement): decisions are what tell the circuit. */
  async function askUntil(what: string, check: () => Promise<boolean>): Promise<void> {
    for (let i = 0; i < 300; i++) {
      if (await check()) return;
      await postJson(service.httpPort, '/json', rl('rl', [[['foo', 'bar']]])).catch(() => undefined);
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.fail(`never: ${what}`);
  }

  it('answers NOT_SERVING while Redis is away and every decision refused, OK once it is back', async () => {
    assert.equal(await health(), 'OK');
    await redis.kill(0);
    try {
      await askUntil('NOT_SERVING', async () => (await health()) === 'NOT_SERVING');
    } finally {
      await redis.restart(0);
    }
    await askUntil('OK again', async () => (await health()) === 'OK');
  });
});
