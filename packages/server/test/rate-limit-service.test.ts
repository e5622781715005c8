/**
 * The rate limit service inside `floodgate serve`, end to end: one gateway process with routes and
 * a rateLimitService, asked by a @grpc/grpc-js client built from Envoy's protos and by the JSON
 * API, scraped for metrics, reloaded through its descriptor file, and shut down.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { GrpcRls, postJson, rl } from './ratelimit/support.js';
import { startGateway, type GatewayProcess } from './support/gateway-process.js';
import { call, metricValue } from './support/http.js';
import { startUpstream, type TestUpstream } from './support/upstream.js';

const TOKEN = 'a-test-admin-token-0123456789';

function descriptors(userLimit: number): string {
  return `domain: api
descriptors:
  - key: tenant
    rate_limit: { unit: hour, requests_per_unit: 5 }
  - key: user
    rate_limit: { unit: hour, requests_per_unit: ${userLimit}, algorithm: sliding-window }
`;
}

function config(upstream: string, descriptorFile: string): string {
  return `
admin: { tokenEnv: FLOODGATE_TEST_ADMIN_TOKEN }
routes:
  - name: api
    match: { path: /api/* }
    upstream: ${upstream}
    rules:
      - name: per-ip
        policy: { algorithm: tokenBucket, capacity: 100, refillPerSecond: 0.000001 }
rateLimitService:
  grpc: { port: 0 }
  http: { port: 0 }
  descriptors: [${JSON.stringify(descriptorFile)}]
`;
}

describe('floodgate serve with a rateLimitService', () => {
  let upstream: TestUpstream;
  let gw: GatewayProcess;
  let dir: string;
  let descriptorFile: string;
  let grpc: GrpcRls;
  let httpPort: number;

  before(async () => {
    upstream = await startUpstream();
    dir = await mkdtemp(join(tmpdir(), 'floodgate-rls-'));
    descriptorFile = join(dir, 'ratelimit.yaml');
    await writeFile(descriptorFile, descriptors(3));
    gw = await startGateway(config(upstream.origin, descriptorFile), { env: { FLOODGATE_TEST_ADMIN_TOKEN: TOKEN } });
    const listening = gw.logs.find((l) => l.msg === 'listening')!;
    assert.deepEqual(listening.domains, ['api']);
    grpc = new GrpcRls(listening.grpcPort as number);
    httpPort = listening.httpPort as number;
    await gw.waitForLog('ready');
  });

  after(async () => {
    grpc?.close();
    await gw?.stop();
    await upstream?.close();
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  it('is ready, proxies its routes, and decides over gRPC and the JSON API on one set of counters', async () => {
    assert.equal((await call(gw.adminUrl('/readyz'))).status, 200);
    assert.equal((await call(gw.url('/api/hello'))).status, 200);
    const first = await grpc.call(rl('api', [[['tenant', 'acme']], [['user', 'ann']]]));
    assert.equal(first.overall_code, 'OK');
    assert.deepEqual(
      first.statuses.map((s) => s.limit_remaining),
      [4, 2],
    );
    assert.equal(first.statuses[1]!.current_limit!.requests_per_unit, 3);
    const json = await postJson(httpPort, '/v1/decide', rl('api', [[['tenant', 'acme']]]));
    assert.equal(json.status, 200);
    assert.equal((json.json.decisions as Array<{ remaining: number }>)[0]!.remaining, 3);
    await grpc.call(rl('api', [[['user', 'ann']]]));
    await grpc.call(rl('api', [[['user', 'ann']]]));
    const refused = await grpc.call(rl('api', [[['user', 'ann']]]));
    assert.equal(refused.overall_code, 'OVER_LIMIT');
  });

  it('counts the service decisions in the gateway metrics, by domain, descriptor and outcome', async () => {
    const metrics = (await call(gw.adminUrl('/metrics'))).body;
    assert.equal(
      metricValue(metrics, 'floodgate_ratelimit_service_decisions_total', {
        domain: 'api',
        descriptor: 'tenant',
        outcome: 'admitted',
      }),
      2,
    );
    assert.equal(
      metricValue(metrics, 'floodgate_ratelimit_service_decisions_total', {
        domain: 'api',
        descriptor: 'user',
        outcome: 'admitted',
      }),
      3,
    );
    assert.equal(
      metricValue(metrics, 'floodgate_ratelimit_service_decisions_total', {
        domain: 'api',
        descriptor: 'user',
        outcome: 'limited',
      }),
      1,
    );
    assert.equal(
      metricValue(metrics, 'floodgate_decisions_total', { route: 'api', rule: 'per-ip', outcome: 'admitted' }),
      1,
    );
  });

  it('shows the service in the admin config dump', async () => {
    const dump = JSON.parse(
      (await call(gw.adminUrl('/admin/config'), { headers: { authorization: `Bearer ${TOKEN}` } })).body,
    ) as { rateLimitService: { domains: string[]; descriptorFiles: string[]; grpcPort: number } };
    assert.deepEqual(dump.rateLimitService.domains, ['api']);
    assert.deepEqual(dump.rateLimitService.descriptorFiles, [descriptorFile]);
  });

  it('reloads a changed descriptor file: the new limit applies, unchanged descriptors keep their counts', async () => {
    const from = gw.logs.length;
    await writeFile(descriptorFile, descriptors(10));
    const reloaded = await gw.waitForLog('config reloaded', from, 5_000);
    assert.equal(reloaded.why, 'file changed');
    const after = await grpc.call(rl('api', [[['tenant', 'acme']], [['user', 'ann']]]));
    // tenant (unchanged): 2 of 5 used before, so 2 left after this one; user (changed) counts afresh under its new limit.
    assert.deepEqual(
      after.statuses.map((s) => s.limit_remaining),
      [2, 9],
    );
    assert.equal(after.statuses[1]!.current_limit!.requests_per_unit, 10);
  });

  it('refuses a bad descriptor file with its line, and keeps serving the previous config', async () => {
    const from = gw.logs.length;
    await writeFile(
      descriptorFile,
      descriptors(10).replace('unit: hour, requests_per_unit: 10', 'unit: fortnight, requests_per_unit: 10'),
    );
    const refused = await gw.waitForLog('config reload rejected; the running config stays in force', from, 5_000);
    const problems = (refused.problems as string[]).join('\n');
    assert.match(
      problems,
      new RegExp(`${descriptorFile.replace(/[.\\/]/g, '\\$&')}:6:\\d+ descriptors\\[1\\]\\.rate_limit\\.unit: `),
      problems,
    );
    const still = await grpc.call(rl('api', [[['user', 'bob']]]));
    assert.equal(still.statuses[0]!.current_limit!.requests_per_unit, 10);
    const metrics = (await call(gw.adminUrl('/metrics'))).body;
    assert.ok(metricValue(metrics, 'floodgate_config_reloads_total', { result: 'rejected' }) >= 1);
  });

  it('shuts down on SIGTERM with its listeners closed', async () => {
    const port = httpPort;
    assert.equal(await gw.stop(), 0);
    await assert.rejects(postJson(port, '/v1/decide', rl('api', [[['tenant', 'acme']]])));
  });
});
