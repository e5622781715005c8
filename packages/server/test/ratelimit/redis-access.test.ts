/**
 * `floodgate ratelimit` signing in to a real Redis: a password (`--redis-password-env`, or in a
 * `redis://:password@` address) and TLS (`rediss://` with `--redis-tls-ca`), against redis-server
 * processes the test starts on free loopback ports and stops by pid. With `--on-store-error throw`,
 * a decision that Redis did not make is gRPC UNAVAILABLE, so an OK answer means Redis answered.
 */
import assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { startRedisServer, type RedisServers } from '../../../floodgate/test/support/redis-server.js';
import { startServiceProcess } from './processes.js';
import { fixturePath, GrpcRls, rl } from './support.js';

const run = promisify(execFile);

/** freePort returns a loopback port free right now (the kernel's pick, never 6379 in practice). */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** startTlsRedis starts redis-server with only a TLS port, and resolves once it accepts connections. */
async function startTlsRedis(dir: string): Promise<{ port: number; ca: string; stop: () => Promise<void> }> {
  const cert = join(dir, 'redis.pem');
  const key = join(dir, 'redis-key.pem');
  await run('openssl', [
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
    '-keyout',
    key,
    '-out',
    cert,
    '-days',
    '1',
    '-subj',
    '/CN=127.0.0.1',
    '-addext',
    'subjectAltName=IP:127.0.0.1',
  ]);
  const port = await freePort();
  const child: ChildProcess = spawn(
    'redis-server',
    [
      '--port',
      '0',
      '--tls-port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--tls-cert-file',
      cert,
      '--tls-key-file',
      key,
      '--tls-ca-cert-file',
      cert,
      '--tls-auth-clients',
      'no',
      '--save',
      '',
      '--appendonly',
      'no',
      '--dir',
      dir,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  await new Promise<void>((resolve, reject) => {
    const watch = (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('Ready to accept connections')) resolve();
    };
    child.stdout!.on('data', watch);
    child.stderr!.on('data', watch);
    child.once('exit', (code) => reject(new Error(`redis-server (TLS) exited with ${String(code)}:\n${output}`)));
  });
  return {
    port,
    ca: cert,
    stop: async () => {
      if (child.exitCode !== null) return;
      const exited = once(child, 'exit');
      process.kill(child.pid!, 'SIGTERM');
      await exited;
    },
  };
}

const ASK = rl('shared', [[['tenant', 't']]]);

describe('floodgate ratelimit signing in to Redis', () => {
  const dir = mkdtempSync(join(tmpdir(), 'floodgate-ratelimit-redis-'));
  let redis: RedisServers;
  let admin: Redis;
  before(async () => {
    redis = await startRedisServer();
    admin = new Redis({ host: '127.0.0.1', port: redis.ports[0]!, lazyConnect: true });
    await admin.connect();
    await admin.config('SET', 'requirepass', 's3cret-pw');
    await admin.auth('s3cret-pw');
  });
  after(async () => {
    admin.disconnect();
    await redis.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  /** decides asks once through a service started with `args`, and returns the overall code or the gRPC error's code. */
  async function decides(args: readonly string[]): Promise<string | number> {
    const p = await startServiceProcess(['--config', fixturePath('shared.yaml'), '--on-store-error', 'throw', ...args]);
    const client = new GrpcRls(p.grpcPort);
    try {
      return await client.call(ASK).then(
        (r) => r.overall_code,
        (e: { code: number }) => e.code,
      );
    } finally {
      client.close();
      await p.stop();
    }
  }

  it('with the password from the environment or in the address, Redis decides; without it, UNAVAILABLE', async () => {
    process.env.FLOODGATE_TEST_REDIS_PASSWORD = 's3cret-pw';
    const address = `127.0.0.1:${redis.ports[0]!}`;
    // A fixed, generous timeout where Redis must decide: on a loaded machine the adaptive one can cut the first call off.
    const patient = ['--store-timeout-ms', '5000'];
    assert.equal(
      await decides(['--redis', address, '--redis-password-env', 'FLOODGATE_TEST_REDIS_PASSWORD', ...patient]),
      'OK',
    );
    assert.equal(await decides(['--redis', `redis://:s3cret-pw@${address}`, ...patient]), 'OK');
    assert.ok((await admin.dbsize()) > 0, 'the counters are in Redis');
    assert.equal(await decides(['--redis', address]), 14); // gRPC UNAVAILABLE
  });

  it('rediss:// with --redis-tls-ca speaks TLS to Redis; plaintext to its TLS port is UNAVAILABLE', async () => {
    const tls = await startTlsRedis(dir);
    try {
      const ca = tls.ca;
      const patient = ['--store-timeout-ms', '5000'];
      assert.equal(
        await decides(['--redis', `rediss://127.0.0.1:${tls.port}`, '--redis-tls-ca', ca, ...patient]),
        'OK',
      );
      assert.equal(await decides(['--redis', `127.0.0.1:${tls.port}`, '--store-timeout-ms', '300']), 14);
    } finally {
      await tls.stop();
    }
  });

  it('a password variable that is not set stops it with exit code 2', async () => {
    delete process.env.FLOODGATE_TEST_REDIS_UNSET;
    await assert.rejects(
      startServiceProcess([
        '--config',
        fixturePath('shared.yaml'),
        '--redis',
        '127.0.0.1:1',
        '--redis-password-env',
        'FLOODGATE_TEST_REDIS_UNSET',
      ]),
      /exited with 2: --redis-password-env names FLOODGATE_TEST_REDIS_UNSET, which is not set/,
    );
  });
});
