import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { startRedisCluster, type RedisServers } from '../../../floodgate/test/support/redis-server.js';
import { startServiceProcess, type ServiceProcess } from './processes.js';
import { fixturePath, GrpcRls, rl } from './support.js';

/** scriptCalls returns the scripts run (EVAL and EVALSHA) on every master of the cluster. */
async function scriptCalls(nodes: readonly Redis[]): Promise<number> {
  let calls = 0;
  for (const node of nodes) {
    const info = await node.info('commandstats');
    for (const m of info.matchAll(/cmdstat_(?:evalsha|eval):calls=(\d+)/g)) calls += Number(m[1]);
  }
  return calls;
}

describe('decision-service processes on a real 6-node Redis Cluster', () => {
  let cluster: RedisServers;
  let nodes: Redis[] = [];
  const processes: ServiceProcess[] = [];
  const clients: GrpcRls[] = [];

  before(async () => {
    cluster = await startRedisCluster();
    nodes = cluster.ports.map((port) => new Redis({ host: '127.0.0.1', port }));
    const seeds = cluster.ports
      .slice(0, 3)
      .map((port) => `127.0.0.1:${port}`)
      .join(',');
    const args = ['--config', fixturePath('shared.yaml'), '--redis-cluster', seeds];
    processes.push(...(await Promise.all([startServiceProcess(args), startServiceProcess(args)])));
    for (const p of processes) clients.push(new GrpcRls(p.grpcPort));
  });
  after(async () => {
    for (const c of clients) c.close();
    await Promise.all(processes.map((p) => p.stop()));
    for (const n of nodes) n.disconnect();
    await cluster.stop();
  });

  it('three descriptors of one domain are one script per request, and one limit holds exactly', async () => {
    const request = rl('shared', [[['route', '/c']], [['tenant', 'cluster']], [['user', 'c1']]]);
    await clients[0]!.call(request);
    await clients[1]!.call(request);
    const before = await scriptCalls(nodes);
    const answers = [];
    for (let i = 0; i < 50; i++) answers.push(await clients[i % 2]!.call(request));
    assert.equal((await scriptCalls(nodes)) - before, 50, 'one script per request, on the slot of the domain');
    assert.equal(
      answers.filter((a) => a.overall_code === 'OK').length,
      38,
      'tenant allows 40; two were spent before counting',
    );
  });
});
