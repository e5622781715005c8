/**
 * RLQS at the edges (#35), end to end: two `floodgate ratelimit` processes on one real Redis that
 * the test starts (and kills, and starts again on its port), data planes that hold their
 * assignments as Envoy's filter does (rlqs-fleet.ts), and the grants they hold summed every 10 ms.
 * bench/rlqs-edges.ts runs the same scenarios longer (100 join storms) and prints the counts.
 */
import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import { after, before, describe, it } from 'node:test';
import { startRedisServer, type RedisServers } from '../../../floodgate/test/support/redis-server.js';
import { EDGE_LIMIT, EDGE_TTL_MS, Fleet, FleetClient, GrantSampler, sleep } from './rlqs-fleet.js';
import { joinStorms, ledgerFaults, ledgerLoss } from './rlqs-scenarios.js';

describe('RLQS at the edges: two replicas on one real Redis', () => {
  let redis: RedisServers;
  let fleet: Fleet;
  const clients: FleetClient[] = [];
  const client = (replica: number, plan: ConstructorParameters<typeof FleetClient>[2]): FleetClient => {
    const c = new FleetClient(fleet, replica, plan);
    clients.push(c);
    c.start();
    return c;
  };
  const closeAll = async (): Promise<void> => {
    for (const c of clients.splice(0)) c.close();
    // The releases reach Redis before the next scenario starts.
    await sleep(300);
  };

  before(async () => {
    redis = await startRedisServer();
    fleet = await Fleet.start(redis.ports[0]!, 2);
  });
  after(async () => {
    for (const c of clients) c.close();
    await fleet.stop();
    await redis.stop();
  });

  it('keep a client that follows its assignment at its fair share (>= 47 of 100) from the second interval on, while the other reports 10x its grant as allowed; count the over-reports', async () => {
    const honest = client(0, { wantPerSecond: 100 });
    const cheat = client(1, { wantPerSecond: 100, overReport: 10 });
    await sleep(2200);
    const shares: number[] = [];
    for (let i = 0; i < 40; i++) {
      shares.push(honest.held(performance.now()));
      await sleep(100);
    }
    assert.ok(
      shares.every((s) => s >= 47),
      `the honest client's grant, every 100 ms from 2.2 s on: ${shares.join(',')}`,
    );
    assert.ok((cheat.grant ?? 0) <= 53, `the over-reporter holds ${cheat.grant}`);
    const overReports = /^floodgate_rlqs_over_reports_total (\d+)/m.exec(await fleet.metricsOf(1));
    assert.ok(Number(overReports?.[1]) >= 3, `over-reports counted: ${overReports?.[0]}`);
    await closeAll();
  });

  it('give a newcomer its first grant within one reporting interval when clients of the other replica hold everything', async () => {
    const holders = [client(0, { wantPerSecond: 100 }), client(0, { wantPerSecond: 100 })];
    await sleep(2500);
    assert.equal(
      holders.reduce((s, c) => s + (c.grant ?? 0), 0),
      EDGE_LIMIT,
    );
    const newcomer = client(1, { wantPerSecond: 100 });
    for (let waited = 0; newcomer.firstGrantAtMs === undefined && waited < 3000; waited += 20) await sleep(20);
    const waitedMs = newcomer.firstGrantAtMs! - newcomer.firstReportAtMs!;
    assert.ok(waitedMs < 1000, `the newcomer's first grant came ${waitedMs.toFixed(0)} ms after its first report`);
    await closeAll();
  });

  it('never hold more than the limit in 5 join storms of 20 clients over two replicas (leaving in two waves), nor through a replica restart', async () => {
    const counts = await joinStorms(fleet, { storms: 5 });
    assert.ok(counts.samples > 500, `only ${counts.samples} samples`);
    assert.equal(
      counts.over,
      0,
      `${counts.over} of ${counts.samples} samples over ${EDGE_LIMIT} (max ${counts.maxSum})`,
    );
    // A replica restarted under four clients: their streams end, they keep their assignments and reconnect.
    const steady = [0, 0, 1, 1].map((r) => client(r, { wantPerSecond: 60 }));
    const sampler = new GrantSampler(() => steady, EDGE_LIMIT);
    await sleep(2000);
    await fleet.restart(0);
    await sleep(EDGE_TTL_MS + 1000);
    const restart = sampler.stop();
    assert.equal(
      restart.over,
      0,
      `restart: ${restart.over} of ${restart.samples} samples over (max ${restart.maxSum})`,
    );
    assert.ok(
      steady.every((c) => (c.grant ?? 0) > 0),
      `after the restart: ${steady.map((c) => c.grant).join(',')}`,
    );
    await closeAll();
  });

  it('never hold more than the limit through a FLUSHALL and a restart of redis-server without persistence, and grant again one TTL later', async () => {
    const result = await ledgerLoss(fleet, ledgerFaults(redis));
    for (const [what, counts] of Object.entries(result.counts))
      assert.equal(counts.over, 0, `${what}: ${counts.over} of ${counts.samples} samples over (max ${counts.maxSum})`);
    assert.ok(result.grantedAfter > 0, 'grants came back after the restart');
    await closeAll();
  });
});
