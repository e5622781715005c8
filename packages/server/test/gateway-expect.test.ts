/**
 * `Expect: 100-continue` through `floodgate serve` with a real client, gateway process and
 * upstream: an admitted upload gets its 100 and reaches the upstream whole (without the Expect
 * field, which this hop answered); a refused one gets its 429 before any body is asked for.
 */
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { startGateway, type GatewayProcess } from './support/gateway-process.js';
import { startUpstream, type TestUpstream } from './support/upstream.js';

/** What a client that waits for `100 Continue` saw: whether it was asked for the body, and the answer. */
interface Upload {
  readonly continued: boolean;
  readonly status: number;
  readonly connection: string | undefined;
}

/** Sends `bytes` bytes to `url` the way curl does for a large body: headers first, the body only after a 100. */
function upload(url: string, bytes: number): Promise<Upload> {
  return new Promise((resolve, reject) => {
    let continued = false;
    const req = request(url, {
      method: 'POST',
      headers: { expect: '100-continue', 'content-length': String(bytes), 'content-type': 'application/octet-stream' },
    });
    req.on('continue', () => {
      continued = true;
      req.end(Buffer.alloc(bytes, 7));
    });
    req.on('response', (res) => {
      res.resume();
      res.on('end', () => resolve({ continued, status: res.statusCode ?? 0, connection: res.headers.connection }));
      // A refusal before the body: the request is finished without it.
      if (!continued) req.destroy();
    });
    req.on('error', (err) => (continued ? reject(err) : undefined));
    req.flushHeaders();
  });
}

describe('Expect: 100-continue (a gateway process, a real upstream and client)', () => {
  let upstream: TestUpstream;
  let gateway: GatewayProcess;

  before(async () => {
    upstream = await startUpstream();
    gateway = await startGateway(`
store: { type: memory }
routes:
  - name: uploads
    upstream: ${upstream.origin}
    rules:
      - name: per-client
        policy: { algorithm: tokenBucket, capacity: 2, refillPerSecond: 0.001 }
        key: { type: ip }
`);
  });

  after(async () => {
    await gateway.stop();
    await upstream.close();
  });

  test('admitted: the client is asked for its body, which reaches the upstream whole, without the Expect field', async () => {
    const first = await upload(gateway.url('/upload'), 2_000_000);
    assert.deepEqual([first.continued, first.status], [true, 200]);
    const seen = upstream.received.at(-1)!;
    assert.equal(seen.bodyBytes, 2_000_000);
    assert.equal(seen.headers.expect, undefined);
    assert.equal(seen.headers['content-length'], '2000000');
  });

  test('refused: 429 before the body is asked for, and the connection is closed (its body was never read)', async () => {
    await upload(gateway.url('/upload'), 1000);
    const before = upstream.received.length;
    const refused = await upload(gateway.url('/upload'), 2_000_000);
    assert.deepEqual([refused.continued, refused.status, refused.connection], [false, 429, 'close']);
    assert.equal(upstream.received.length, before, 'the upstream never saw it');
  });
});
