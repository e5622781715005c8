/**
 * The rateLimitService section's descriptor files as config: read relative to the config file,
 * their mistakes reported by `floodgate check` with the descriptor file's line; and a gateway that
 * serves only the rate limit service (no routes).
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { runCheck } from '../src/cli/commands.js';
import { loadConfig } from '../src/config/load.js';
import { GrpcRls, rl } from './ratelimit/support.js';
import { startGateway } from './support/gateway-process.js';
import { call } from './support/http.js';

const GOOD = 'domain: api\ndescriptors:\n  - key: tenant\n    rate_limit: { unit: minute, requests_per_unit: 2 }\n';

async function check(file: string): Promise<{ code: number; stdout: string; stderr: string }> {
  const out = new PassThrough();
  const err = new PassThrough();
  let stdout = '';
  let stderr = '';
  out.on('data', (c: Buffer) => (stdout += c.toString()));
  err.on('data', (c: Buffer) => (stderr += c.toString()));
  const code = await runCheck(file, out, err);
  return { code, stdout, stderr };
}

describe('rateLimitService descriptor files', () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'floodgate-rls-config-'));
    await writeFile(join(dir, 'good.yaml'), GOOD);
    await writeFile(join(dir, 'again.yaml'), GOOD);
    await writeFile(
      join(dir, 'bad.yaml'),
      'domain: api\ndescriptors:\n  - key: tenant\n    rate_limit: { unit: fortnight, requests_per_unit: 2 }\n  - key: user\n    shadow: true\n',
    );
  });
  after(async () => {
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  it('are read relative to the config file; a config may have a rateLimitService and no routes', async () => {
    const file = join(dir, 'service-only.yaml');
    await writeFile(file, 'rateLimitService:\n  grpc: { port: 0 }\n  descriptors: [good.yaml]\n');
    const loaded = await loadConfig(file, {});
    assert.deepEqual(
      loaded.domains.map((d) => d.domain),
      ['api'],
    );
    assert.deepEqual(loaded.descriptorFiles, [join(dir, 'good.yaml')]);
    const res = await check(file);
    assert.equal(res.code, 0, res.stderr);
    assert.match(res.stdout, /valid \(0 routes, 0 rules, memory store, a rate limit service for 1 domain: api\)/);
  });

  it('the example config with a rate limit service checks', async () => {
    const example = join(import.meta.dirname, '..', '..', '..', 'examples', 'gateway', 'with-ratelimit-service.yaml');
    const res = await check(example);
    assert.equal(res.code, 0, res.stderr);
    assert.match(res.stdout, /a rate limit service for 1 domain: api/);
  });

  it('floodgate check lists every mistake of a descriptor file with its file and line', async () => {
    const file = join(dir, 'uses-bad.yaml');
    await writeFile(file, 'rateLimitService:\n  http: { port: 0 }\n  descriptors: [bad.yaml]\n');
    const res = await check(file);
    assert.equal(res.code, 1);
    assert.match(res.stderr, /bad\.yaml:4:\d+ descriptors\[0\]\.rate_limit\.unit: unknown unit "fortnight"/);
    assert.match(res.stderr, /bad\.yaml:6:\d+ descriptors\[1\]\.shadow: unknown key "shadow"/);
    assert.match(res.stderr, /2 problems found/);
  });

  it('a domain defined in two descriptor files is refused, naming both', async () => {
    const file = join(dir, 'twice.yaml');
    await writeFile(file, 'rateLimitService:\n  http: { port: 0 }\n  descriptors: [good.yaml, again.yaml]\n');
    const res = await check(file);
    assert.equal(res.code, 1);
    assert.match(
      res.stderr,
      /again\.yaml:1:9 domain: domain "api" is already defined at .*good\.yaml:1:9 \(fix: define each domain in one descriptor file only\)/,
    );
  });

  it('responseHeaders and shadowMode apply to the service a gateway hosts', async () => {
    const gw = await startGateway(
      `rateLimitService:\n  grpc: { port: 0 }\n  responseHeaders: x-ratelimit\n  shadowMode: true\n  descriptors: [${JSON.stringify(join(dir, 'good.yaml'))}]\n`,
    );
    const client = new GrpcRls(gw.logs.find((l) => l.msg === 'listening')!.grpcPort as number);
    try {
      await gw.waitForLog('ready');
      let last;
      for (let i = 0; i < 3; i++) last = await client.call(rl('api', [[['tenant', 'b']]]));
      assert.equal(last!.overall_code, 'OK', 'shadow mode answers OK over the limit of 2');
      assert.deepEqual(last!.response_headers_to_add.map((h) => [h.key, h.value]).slice(0, 2), [
        ['X-RateLimit-Limit', '2'],
        ['X-RateLimit-Remaining', '0'],
      ]);
    } finally {
      client.close();
      assert.equal(await gw.stop(), 0);
    }
  });

  it('a gateway with only a rateLimitService serves it, and answers 404 on its traffic port', async () => {
    const gw = await startGateway(
      `rateLimitService:\n  grpc: { port: 0 }\n  descriptors: [${JSON.stringify(join(dir, 'good.yaml'))}]\n`,
    );
    const client = new GrpcRls(gw.logs.find((l) => l.msg === 'listening')!.grpcPort as number);
    try {
      await gw.waitForLog('ready');
      const res = await client.call(rl('api', [[['tenant', 'a']]]));
      assert.equal(res.statuses[0]!.limit_remaining, 1);
      assert.equal((await call(gw.url('/anything'))).status, 404);
    } finally {
      client.close();
      assert.equal(await gw.stop(), 0);
    }
  });
});
