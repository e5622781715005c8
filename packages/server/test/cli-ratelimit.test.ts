/**
 * `floodgate ratelimit`, the rate limit service alone, run through the `floodgate` launcher as a
 * user would: help, checking descriptor files, serving Envoy's gRPC API, stopping on SIGTERM.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { after, describe, it } from 'node:test';
import { fixturePath, GrpcRls, postJson, rl } from './ratelimit/support.js';
import { floodgate, FLOODGATE_BIN } from './support/cli.js';

describe('floodgate ratelimit', () => {
  const dir = mkdtempSync(join(tmpdir(), 'floodgate-ratelimit-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('is listed, and has --help', async () => {
    assert.match((await floodgate('--help')).stdout, /^ {2}ratelimit\b/m);
    const help = await floodgate('ratelimit', '--help');
    assert.equal(help.code, 0);
    for (const flag of [
      '--config <file>',
      '--grpc-port <port>',
      '--http-port <port>',
      '--redis <host:port>',
      '--redis-cluster',
      '--on-store-error',
      '--store-timeout-ms',
      '--check',
    ])
      assert.ok(help.stdout.includes(flag), flag);
  });

  it('--check names the domains of good files, and lists every error of a bad one with its line (exit 2)', async () => {
    const good = await floodgate(
      'ratelimit',
      '--check',
      '--config',
      fixturePath('example.yaml'),
      '--config',
      fixturePath('quota.yaml'),
    );
    assert.equal(good.code, 0, good.stderr);
    assert.match(good.stdout, /2 domain\(s\): rl, quota/);
    const bad = join(dir, 'bad.yaml');
    writeFileSync(
      bad,
      'domain: d\ndescriptors:\n  - key: k\n    rate_limit: { unit: fortnight, requests_per_unit: 1 }\n',
    );
    const res = await floodgate('ratelimit', '--check', '--config', bad);
    assert.equal(res.code, 2);
    assert.match(res.stderr, /bad\.yaml:4:\d+: descriptors\[0\]\.rate_limit\.unit: unknown unit "fortnight"/);
    const flag = await floodgate(
      'ratelimit',
      '--config',
      fixturePath('example.yaml'),
      '--on-store-error',
      'sometimes',
      '--grpc-port',
      '0',
    );
    assert.equal(flag.code, 2);
    assert.match(flag.stderr, /--on-store-error must be local, fail-open, fail-closed or throw/);
  });

  it("serves Envoy's gRPC API and the JSON API until SIGTERM", async () => {
    const child = spawn(
      process.execPath,
      [FLOODGATE_BIN, 'ratelimit', '--config', fixturePath('example.yaml'), '--grpc-port', '0', '--http-port', '0'],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const exited = once(child, 'exit');
    const killer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    try {
      const [line] = (await once(createInterface({ input: child.stdout! }), 'line')) as [string];
      const ready = JSON.parse(line) as { ready: boolean; grpcPort: number; httpPort: number };
      assert.equal(ready.ready, true);
      const client = new GrpcRls(ready.grpcPort);
      try {
        const res = await client.call(rl('rl', [[['foo', 'p']]]));
        assert.equal(res.statuses[0]!.current_limit!.requests_per_unit, 2);
        assert.equal(res.statuses[0]!.limit_remaining, 1);
      } finally {
        client.close();
      }
      const json = await postJson(ready.httpPort, '/v1/decide', rl('rl', [[['foo', 'p']]]));
      assert.equal((json.json.decisions as Array<{ remaining: number }>)[0]!.remaining, 0);
      child.kill('SIGTERM');
      const [code] = (await exited) as [number | null];
      assert.equal(code, 0);
    } finally {
      clearTimeout(killer);
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  });
});
