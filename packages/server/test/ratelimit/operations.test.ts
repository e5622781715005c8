/**
 * `floodgate ratelimit` as an operator runs it, in a real process: its Prometheus metrics (shadow
 * counted apart, descriptors named by their configured path), reload when a descriptor file
 * changes, and health that follows a real Redis going away and coming back.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { request } from 'undici';
import { startRedisServer } from '../../../floodgate/test/support/redis-server.js';
import { startServiceProcess } from './processes.js';
import { GrpcRls, rl } from './support.js';

async function get(port: number, path: string): Promise<{ status: number; text: string }> {
  const res = await request(`http://127.0.0.1:${port}${path}`, { headersTimeout: 5000, bodyTimeout: 5000 });
  return { status: res.statusCode, text: await res.body.text() };
}

/** until calls `probe` every 50 ms until it returns true, at most `tries` times; it returns the last answer. */
async function until(probe: () => Promise<boolean>, tries = 200): Promise<boolean> {
  for (let i = 0; i < tries; i++) {
    if (await probe()) return true;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return false;
}

const SHADOWED = [
  'domain: ops',
  'descriptors:',
  '  - key: path',
  '    value: /v1/*',
  '    rate_limit: { unit: hour, requests_per_unit: 1 }',
  '  - key: trial',
  '    shadow_mode: true',
  '    rate_limit: { unit: hour, requests_per_unit: 1 }',
  '',
].join('\n');

describe('floodgate ratelimit, operated', () => {
  const dir = mkdtempSync(join(tmpdir(), 'floodgate-ratelimit-ops-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('serves metrics: outcomes by configured path, shadow apart from refusals, config loads', async () => {
    const path = join(dir, 'metrics.yaml');
    writeFileSync(path, SHADOWED);
    const p = await startServiceProcess(['--config', path, '--metrics-port', '0', '--no-watch']);
    const client = new GrpcRls(p.grpcPort);
    try {
      for (const value of ['/v1/secret-token-a', '/v1/secret-token-b'])
        await client.call(rl('ops', [[['path', value]]]));
      await client.call(rl('ops', [[['path', '/v1/secret-token-a']]]));
      for (let i = 0; i < 2; i++) await client.call(rl('ops', [[['trial', 'x']]]));
      const { status, text } = await get(p.metricsPort!, '/metrics');
      assert.equal(status, 200);
      const line = (labels: string) =>
        new RegExp(`floodgate_ratelimit_service_decisions_total\\{${labels}\\} (\\d+)`).exec(text)?.[1];
      assert.equal(line('domain="ops",descriptor="path_/v1/\\*",outcome="admitted"'), '2');
      assert.equal(line('domain="ops",descriptor="path_/v1/\\*",outcome="limited"'), '1');
      assert.equal(line('domain="ops",descriptor="trial",outcome="admitted"'), '1');
      assert.equal(line('domain="ops",descriptor="trial",outcome="shadow_limited"'), '1');
      assert.doesNotMatch(text, /secret-token/);
      assert.match(text, /floodgate_ratelimit_service_requests_total\{answer="over_limit"\} 1/);
      assert.match(text, /floodgate_ratelimit_service_config_loads_total\{result="success"\} 1/);
      assert.match(text, /floodgate_ratelimit_service_store_up 1/);
    } finally {
      client.close();
      await p.stop();
    }
  });

  it('reloads when a descriptor file changes, and keeps the running config when the new one has errors', async () => {
    const path = join(dir, 'watched.yaml');
    const limitOf = (n: number | string) =>
      `domain: live\ndescriptors:\n  - key: k\n    rate_limit: { unit: hour, requests_per_unit: ${n} }\n`;
    writeFileSync(path, limitOf(2));
    const p = await startServiceProcess(['--config', path]);
    const client = new GrpcRls(p.grpcPort);
    const limitNow = async () =>
      (await client.call(rl('live', [[['k', 'v']]]))).statuses[0]!.current_limit?.requests_per_unit;
    try {
      assert.equal(await limitNow(), 2);
      writeFileSync(path, limitOf(7));
      assert.ok(await until(async () => (await limitNow()) === 7), 'the changed file was served');
      writeFileSync(path, limitOf('-1'));
      assert.ok(await until(async () => p.stderr().includes('config reload refused')));
      assert.match(
        p.stderr(),
        /watched\.yaml:4:\d+: descriptors\[0\]\.rate_limit\.requests_per_unit: must be a whole number/,
      );
      assert.equal(await limitNow(), 7);
    } finally {
      client.close();
      await p.stop();
    }
  });

  it('health follows a real Redis: NOT_SERVING while it is away (--health-follows-store always), SERVING once it is back', async () => {
    const redis = await startRedisServer();
    const path = join(dir, 'redis.yaml');
    writeFileSync(path, SHADOWED);
    const p = await startServiceProcess([
      '--config',
      path,
      '--redis',
      `127.0.0.1:${redis.ports[0]!}`,
      '--store-timeout-ms',
      '200',
      '--health-follows-store',
      'always',
      '--metrics-port',
      '0',
    ]);
    const client = new GrpcRls(p.grpcPort);
    const healthy = async () => (await get(p.httpPort, '/healthcheck')).status === 200;
    // Decisions are what tell the store's circuit that Redis is gone or back.
    const decide = () => client.call(rl('ops', [[['trial', 'x']]])).catch(() => undefined);
    try {
      await decide();
      assert.equal(await healthy(), true);
      await redis.kill(0);
      assert.ok(await until(async () => (await decide(), !(await healthy()))), 'NOT_SERVING while Redis is away');
      assert.equal((await get(p.httpPort, '/healthcheck')).text, 'NOT_SERVING');
      assert.match((await get(p.metricsPort!, '/metrics')).text, /floodgate_ratelimit_service_store_up 0/);
      await redis.restart(0);
      assert.ok(await until(async () => (await decide(), await healthy())), 'SERVING once Redis is back');
      assert.match((await get(p.metricsPort!, '/metrics')).text, /floodgate_ratelimit_service_store_up 1/);
    } finally {
      client.close();
      await p.stop();
      await redis.stop();
    }
  });
});
