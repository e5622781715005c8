import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { Redis } from 'ioredis';
import { startRedisServer, type RedisServers } from '../../../floodgate/test/support/redis-server.js';
import { startServiceProcess, type ServiceProcess } from './processes.js';
import { fixturePath, GrpcRls, postJson, rl } from './support.js';

/** scriptCalls returns how many scripts Redis has run (EVAL and EVALSHA), from INFO commandstats. */
async function scriptCalls(redis: Redis): Promise<number> {
  const info = await redis.info('commandstats');
  let calls = 0;
  for (const m of info.matchAll(/cmdstat_(?:evalsha|eval):calls=(\d+)/g)) calls += Number(m[1]);
  return calls;
}

describe('several decision-service processes on one real Redis', () => {
  let redis: RedisServers;
  let admin: Redis;
  const processes: ServiceProcess[] = [];
  const clients: GrpcRls[] = [];
  const args = (): string[] => ['--config', fixturePath('shared.yaml'), '--redis', `127.0.0.1:${redis.ports[0]!}`];

  before(async () => {
    redis = await startRedisServer();
    admin = new Redis({ host: '127.0.0.1', port: redis.ports[0]!, lazyConnect: true });
    admin.on('error', () => undefined); // the test kills Redis on purpose
    await admin.connect();
    processes.push(
      ...(await Promise.all([startServiceProcess(args()), startServiceProcess(args()), startServiceProcess(args())])),
    );
    for (const p of processes) clients.push(new GrpcRls(p.grpcPort));
  });
  after(async () => {
    for (const c of clients) c.close();
    await Promise.all(processes.map((p) => p.stop()));
    admin.disconnect();
    await redis.stop();
  });

  it('enforce one limit exactly, and charge nothing for refused requests', async () => {
    const request = rl('shared', [[['route', '/pay']], [['tenant', 'acme']], [['user', 'u1']]]);
    const answers = await Promise.all(Array.from({ length: 120 }, (_, i) => clients[i % 3]!.call(request)));
    const admitted = answers.filter((a) => a.overall_code === 'OK').length;
    assert.equal(admitted, 40, 'tenant allows 40, whichever process answered');
    for (const a of answers.filter((x) => x.overall_code === 'OVER_LIMIT'))
      assert.equal(a.statuses[1]!.code, 'OVER_LIMIT');
    // Ask without counting (hits 0): the other two limits were charged only for the 40 admitted.
    const ask = await clients[0]!.call({
      domain: 'shared',
      descriptors: ['route', 'user'].map((key) => ({
        entries: [{ key, value: key === 'route' ? '/pay' : 'u1' }],
        hits_addend: { value: '0' },
      })),
    });
    assert.deepEqual(
      ask.statuses.map((s) => s.limit_remaining),
      [960, 960],
    );
  });

  it('one Redis round trip per request, whatever the number of descriptors', async () => {
    const request = rl('shared', [[['route', '/rt']], [['tenant', 'rt']], [['user', 'rt']]]);
    await clients[1]!.call(request); // loads the script into this process's cache
    const before = await scriptCalls(admin);
    for (let i = 0; i < 10; i++) await clients[1]!.call(request);
    assert.equal((await scriptCalls(admin)) - before, 10);
  });

  it('the JSON API of another process sees the same counters', async () => {
    const res = await postJson(processes[2]!.httpPort, '/json', rl('shared', [[['tenant', 'acme']]]));
    assert.equal(res.status, 429);
  });

  it('with Redis gone, keeps answering by the local fallback (the default) or UNAVAILABLE (--on-store-error throw), and decides on Redis again once it is back', async () => {
    const strict = await startServiceProcess([...args(), '--on-store-error', 'throw']);
    const strictClient = new GrpcRls(strict.grpcPort);
    const reasonOf = async (value: string): Promise<unknown> => {
      const res = await postJson(processes[0]!.httpPort, '/v1/decide', rl('shared', [[['tenant', value]]]));
      assert.equal(res.status, 200, JSON.stringify(res.json));
      return (res.json.decisions as Array<{ reason: string }>)[0]!.reason;
    };
    try {
      await redis.kill(0);
      assert.equal(await reasonOf('down'), 'fallback', 'the service keeps deciding, on its share of the limit');
      assert.equal((await clients[0]!.call(rl('shared', [[['tenant', 'down']]]))).overall_code, 'OK');
      await assert.rejects(strictClient.call(rl('shared', [[['tenant', 'down']]])), (e: grpc.ServiceError) => {
        assert.equal(e.code, grpc.status.UNAVAILABLE);
        assert.match(e.details, /store could not decide/);
        return true;
      });
      await redis.restart(0);
      let reason: unknown;
      for (let i = 0; i < 100 && reason !== 'ok'; i++) {
        reason = await reasonOf('back');
        if (reason !== 'ok') await new Promise((resolve) => setTimeout(resolve, 50));
      }
      assert.equal(reason, 'ok', 'decided on Redis again');
    } finally {
      strictClient.close();
      await strict.stop();
    }
  });
});
