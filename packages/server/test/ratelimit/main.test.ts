import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { after, describe, it } from 'node:test';
import { fixturePath, GrpcRls, rl } from './support.js';
import { startServiceProcess } from './processes.js';

const run = promisify(execFile);
const MAIN = fileURLToPath(new URL('../../src/cli/ratelimit-main.ts', import.meta.url));

async function main(args: readonly string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(
      process.execPath,
      ['--conditions=floodgate-source', '--import', 'tsx', MAIN, ...args],
      { timeout: 20_000 },
    );
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

describe('main.ts', () => {
  const dir = mkdtempSync(join(tmpdir(), 'floodgate-decision-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('--check reads envoyproxy/ratelimit example configs and names their domains', async () => {
    const res = await main([
      '--check',
      '--config',
      fixturePath('example.yaml'),
      '--config',
      fixturePath('config.yaml'),
      '--config',
      fixturePath('quota.yaml'),
    ]);
    assert.equal(res.code, 0, res.stderr);
    assert.match(res.stdout, /3 domain\(s\): rl, mongo_cps, quota/);
  });

  it('a bad config stops it with every error, by file, line and path, and exit code 2', async () => {
    const bad = join(dir, 'bad.yaml');
    writeFileSync(
      bad,
      'domain: d\ndescriptors:\n  - key: k\n    rate_limit: { unit: fortnight, requests_per_unit: 1 }\n  - key: j\n    shadow: true\n',
    );
    const res = await main([
      '--config',
      bad,
      '--config',
      fixturePath('config.yaml'),
      '--config',
      fixturePath('config.yaml'),
      '--grpc-port',
      '0',
    ]);
    assert.equal(res.code, 2);
    assert.match(res.stderr, /bad\.yaml:4:\d+: descriptors\[0\]\.rate_limit\.unit: unknown unit "fortnight"/);
    assert.match(res.stderr, /bad\.yaml:6:5: descriptors\[1\]\.shadow: unknown key "shadow"/);
    assert.match(res.stderr, /config\.yaml:3:9: domain: domain "mongo_cps" is already defined at .*config\.yaml:3:9/);
    assert.equal((await main(['--grpc-port', '0'])).code, 2);
    assert.match((await main(['--config', join(dir, 'missing.yaml')])).stderr, /missing\.yaml: cannot read/);
  });

  it('SIGHUP reloads the config; a config with errors is refused and the previous one kept', async () => {
    const path = join(dir, 'reload.yaml');
    writeFileSync(
      path,
      'domain: live\ndescriptors:\n  - key: k\n    rate_limit: { unit: hour, requests_per_unit: 2 }\n',
    );
    const p = await startServiceProcess(['--config', path]);
    const client = new GrpcRls(p.grpcPort);
    const limitNow = async (): Promise<number | undefined> =>
      (await client.call(rl('live', [[['k', 'v']]]))).statuses[0]!.current_limit?.requests_per_unit;
    const until = async (expected: number): Promise<void> => {
      for (let i = 0; i < 100 && (await limitNow()) !== expected; i++)
        await new Promise((resolve) => setTimeout(resolve, 50));
    };
    try {
      assert.equal(await limitNow(), 2);
      writeFileSync(
        path,
        'domain: live\ndescriptors:\n  - key: k\n    rate_limit: { unit: hour, requests_per_unit: 7 }\n',
      );
      process.kill(p.pid, 'SIGHUP');
      await until(7);
      assert.equal(await limitNow(), 7);
      writeFileSync(
        path,
        'domain: live\ndescriptors:\n  - key: k\n    rate_limit: { unit: hour, requests_per_unit: 9, burst: 1 }\n',
      );
      process.kill(p.pid, 'SIGHUP');
      for (let i = 0; i < 100 && !p.stderr().includes('config reload refused'); i++)
        await new Promise((resolve) => setTimeout(resolve, 50));
      assert.match(
        p.stderr(),
        /config reload refused, still serving the previous config:\n.*reload\.yaml:4:\d+: descriptors\[0\]\.rate_limit\.burst: unknown key "burst"/,
      );
      assert.equal(await limitNow(), 7, 'the bad config was refused');
    } finally {
      client.close();
      await p.stop();
    }
  });

  it("serves Envoy's gRPC API as a process, and stops on SIGTERM", async () => {
    const p = await startServiceProcess(['--config', fixturePath('example.yaml')]);
    const client = new GrpcRls(p.grpcPort);
    try {
      const res = await client.call(rl('rl', [[['foo', 'p']]]));
      assert.equal(res.statuses[0]!.current_limit!.requests_per_unit, 2);
    } finally {
      client.close();
      await p.stop();
    }
  });
});
