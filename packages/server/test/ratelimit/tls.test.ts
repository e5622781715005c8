/**
 * TLS on the gRPC listener of `floodgate ratelimit` (`--grpc-tls-cert`, `--grpc-tls-key`, and
 * `--grpc-tls-client-ca` for mutual TLS), with certificates made by openssl for the test, and
 * RateLimitClient's `grpcs://`.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { RateLimitClient } from '../../src/ratelimit/index.js';
import { startServiceProcess } from './processes.js';

const run = promisify(execFile);

/** selfSigned writes a self-signed certificate for 127.0.0.1 and its key under `dir`, named `name`. */
async function selfSigned(dir: string, name: string): Promise<{ cert: string; key: string }> {
  const cert = join(dir, `${name}.pem`);
  const key = join(dir, `${name}-key.pem`);
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
    `/CN=${name}`,
    '-addext',
    'subjectAltName=IP:127.0.0.1,DNS:localhost',
  ]);
  return { cert, key };
}

describe('gRPC over TLS', () => {
  const dir = mkdtempSync(join(tmpdir(), 'floodgate-ratelimit-tls-'));
  let server: { cert: string; key: string };
  let client: { cert: string; key: string };
  const config = join(dir, 'rl.yaml');
  before(async () => {
    server = await selfSigned(dir, 'server');
    client = await selfSigned(dir, 'client');
    writeFileSync(
      config,
      'domain: d\ndescriptors:\n  - key: k\n    rate_limit: { unit: hour, requests_per_unit: 5 }\n',
    );
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  const ask = (c: RateLimitClient) => c.shouldRateLimit({ domain: 'd', descriptors: [{ entries: [['k', 'v']] }] });

  it('serves over TLS to a client that trusts its certificate, and not in plaintext', async () => {
    const p = await startServiceProcess([
      '--config',
      config,
      '--grpc-tls-cert',
      server.cert,
      '--grpc-tls-key',
      server.key,
    ]);
    const trusting = new RateLimitClient({
      url: `grpcs://127.0.0.1:${p.grpcPort}`,
      tls: { caPem: readFileSync(server.cert) },
      timeoutMs: 5000,
    });
    const plaintext = new RateLimitClient({ url: `grpc://127.0.0.1:${p.grpcPort}`, timeoutMs: 2000 });
    try {
      const d = await ask(trusting);
      assert.deepEqual([d.allowed, d.statuses[0]!.remaining], [true, 4]);
      await assert.rejects(ask(plaintext), { code: 'STORE_ERROR' });
    } finally {
      await trusting.close();
      await plaintext.close();
      await p.stop();
    }
  });

  it('with a client CA, only a client presenting a certificate it signed is served', async () => {
    const p = await startServiceProcess([
      '--config',
      config,
      '--grpc-tls-cert',
      server.cert,
      '--grpc-tls-key',
      server.key,
      '--grpc-tls-client-ca',
      client.cert,
    ]);
    const url = `grpcs://127.0.0.1:${p.grpcPort}`;
    const withCert = new RateLimitClient({
      url,
      tls: { caPem: readFileSync(server.cert), certPem: readFileSync(client.cert), keyPem: readFileSync(client.key) },
      timeoutMs: 5000,
    });
    const without = new RateLimitClient({ url, tls: { caPem: readFileSync(server.cert) }, timeoutMs: 2000 });
    try {
      assert.equal((await ask(withCert)).allowed, true);
      await assert.rejects(ask(without), { code: 'STORE_ERROR' });
    } finally {
      await withCert.close();
      await without.close();
      await p.stop();
    }
  });

  it('a key without its certificate, or a file that cannot be read, stops it with exit code 2', async () => {
    await assert.rejects(
      startServiceProcess(['--config', config, '--grpc-tls-key', server.key]),
      /exited with 2: --grpc-tls-cert and --grpc-tls-key go together/,
    );
    await assert.rejects(
      startServiceProcess(['--config', config, '--grpc-tls-cert', join(dir, 'none.pem'), '--grpc-tls-key', server.key]),
      /--grpc-tls-cert: cannot read .*none\.pem/,
    );
  });
});
