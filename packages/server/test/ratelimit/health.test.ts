import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { request } from 'undici';
import { loadHealthService } from '../../src/ratelimit/index.js';
import { domainsOf, run, type Running } from './support.js';

describe('gRPC health checking (grpc.health.v1.Health)', () => {
  let r: Running;
  let client: grpc.Client & {
    Check(
      req: unknown,
      options: grpc.CallOptions,
      cb: (e: grpc.ServiceError | null, v: { status: string }) => void,
    ): void;
    Watch(req: unknown): grpc.ClientReadableStream<{ status: string }>;
  };
  before(async () => {
    r = await run(domainsOf('domain: d\n'));
    const Health = loadHealthService();
    client = new Health(`127.0.0.1:${r.servers.grpcPort!}`, grpc.credentials.createInsecure()) as never;
  });
  after(async () => {
    client.close();
    await r.close();
  });

  const check = (service: string) =>
    new Promise<{ status: string }>((resolve, reject) =>
      client.Check({ service }, { deadline: Date.now() + 5000 }, (e, v) => (e === null ? resolve(v) : reject(e))),
    );

  it('answers SERVING for the server and for RateLimitService, NOT_FOUND for other names', async () => {
    assert.deepEqual(await check(''), { status: 'SERVING' });
    assert.deepEqual(await check('envoy.service.ratelimit.v3.RateLimitService'), { status: 'SERVING' });
    await assert.rejects(check('some.Other'), (e: grpc.ServiceError) => e.code === grpc.status.NOT_FOUND);
  });

  it('Watch sends the status at once and stays open until cancelled', async () => {
    for (const [service, expected] of [
      ['', 'SERVING'],
      ['some.Other', 'SERVICE_UNKNOWN'],
    ] as const) {
      const stream = client.Watch({ service });
      const first = await new Promise<{ status: string }>((resolve, reject) => {
        stream.once('data', resolve);
        stream.once('error', reject);
      });
      assert.equal(first.status, expected);
      stream.on('error', () => undefined); // the cancellation itself
      stream.cancel();
    }
  });

  it('follows the service health: NOT_SERVING to Check, Watch and GET /healthcheck while it is down', async () => {
    const stream = client.Watch({ service: 'envoy.service.ratelimit.v3.RateLimitService' });
    const seen: string[] = [];
    const three = new Promise<void>((resolve, reject) => {
      stream.on('data', (v: { status: string }) => {
        seen.push(v.status);
        if (seen.length === 3) resolve();
      });
      stream.once('error', reject);
    });
    const healthcheck = async () => {
      const res = await request(`http://127.0.0.1:${r.servers.httpPort!}/healthcheck`);
      return [res.statusCode, await res.body.text()];
    };
    try {
      assert.deepEqual(await healthcheck(), [200, 'OK']);
      r.service.health.set(false);
      assert.deepEqual(await check(''), { status: 'NOT_SERVING' });
      assert.deepEqual(await healthcheck(), [500, 'NOT_SERVING']);
      r.service.health.set(true);
      assert.deepEqual(await check(''), { status: 'SERVING' });
      await three;
      assert.deepEqual(seen, ['SERVING', 'NOT_SERVING', 'SERVING']);
    } finally {
      r.service.health.set(true);
      stream.on('error', () => undefined);
      stream.cancel();
    }
  });
});
