/**
 * `forwardedHeader`: behind a proxy that writes RFC 7239 `Forwarded`, the gateway keys clients by
 * the address that header gives (the setting the client-address warning names), with a gateway
 * process and a real upstream; a bad value is a config error at its line.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { floodgate } from './support/cli.js';
import { startGateway, type GatewayProcess } from './support/gateway-process.js';
import { call } from './support/http.js';
import { startUpstream, type TestUpstream } from './support/upstream.js';

const config = (upstream: string, header: string): string => `
trustProxy: 1
forwardedHeader: ${header}
routes:
  - name: api
    upstream: ${upstream}
    rules:
      - name: per-client
        policy: { algorithm: tokenBucket, capacity: 1, refillPerSecond: 0.000001 }
        key: { type: ip }
`;

describe('forwardedHeader (a gateway process behind a proxy that writes Forwarded)', () => {
  let upstream: TestUpstream;
  let gw: GatewayProcess;

  before(async () => {
    upstream = await startUpstream();
    gw = await startGateway(config(upstream.origin, 'forwarded'));
  });

  after(async () => {
    await gw?.stop();
    await upstream?.close();
  });

  it("keys each client by the address its proxy's Forwarded header gives", async () => {
    const as = (address: string): Promise<number> =>
      call(gw.url('/x'), { headers: { forwarded: `for=${address};proto=http` } }).then((r) => r.status);
    assert.deepEqual(
      [await as('203.0.113.1'), await as('203.0.113.2'), await as('203.0.113.1'), await as('"[2001:db8::7]"')],
      [200, 200, 429, 200],
      'two clients, two buckets; a client again, its own bucket spent; an IPv6 client, a bucket of its own',
    );
  });

  it('a value other than x-forwarded-for or forwarded is a config error at its line', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'floodgate-fwd-'));
    try {
      const file = join(dir, 'floodgate.yaml');
      await writeFile(file, config(upstream.origin, 'x-real-ip'));
      const r = await floodgate('check', file);
      assert.notEqual(r.code, 0);
      assert.match(r.stderr, /floodgate\.yaml:3:\d+.*forwardedHeader/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
