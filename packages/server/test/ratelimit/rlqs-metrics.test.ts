import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startRedisServer, type RedisServers } from '../../../floodgate/test/support/redis-server.js';
import { startServiceProcess, type ServiceProcess } from './processes.js';
import { fixturePath } from './support.js';
import { RlqsClient } from './rlqs-support.js';

const API = { name: 'api' };

async function scrape(p: ServiceProcess): Promise<string> {
  const response = await fetch(`http://127.0.0.1:${p.metricsPort!}/metrics`);
  return response.text();
}

/** valueOf returns the sample `name` (with its labels, as written) of a scrape, or undefined. */
function valueOf(text: string, name: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? undefined : Number(line.slice(name.length + 1));
}

describe('RLQS metrics of floodgate ratelimit (a real process on a real Redis)', () => {
  let redis: RedisServers;
  let service: ServiceProcess;
  const clients: RlqsClient[] = [];
  before(async () => {
    redis = await startRedisServer();
    service = await startServiceProcess([
      '--config',
      fixturePath('rlqs-shared.yaml'),
      '--redis',
      `127.0.0.1:${redis.ports[0]!}`,
      '--metrics-port',
      '0',
    ]);
  });
  after(async () => {
    for (const c of clients) c.close();
    await service.stop();
    await redis.stop();
  });

  it('count streams, buckets, reports and the actions answered and pushed', async () => {
    const a = new RlqsClient(service.grpcPort);
    const b = new RlqsClient(service.grpcPort);
    clients.push(a, b);
    a.report('edge', [API, { name: 'nobody' }], 100);
    await a.until(() => a.received.length === 2, 'the answers to a');
    b.report('edge', [API], 100);
    // b's join halves a's share: a is pushed its half.
    await a.until(() => a.received.length === 3, 'the push to a');
    const text = await scrape(service);
    assert.equal(valueOf(text, 'floodgate_rlqs_streams'), 2);
    assert.equal(valueOf(text, 'floodgate_rlqs_buckets'), 2, 'api on two streams (nobody is not tracked)');
    assert.equal(valueOf(text, 'floodgate_rlqs_pending_actions'), 0);
    assert.equal(valueOf(text, 'floodgate_rlqs_reports_total'), 2);
    assert.equal(valueOf(text, 'floodgate_rlqs_actions_total{reason="answer"}'), 3);
    assert.ok(valueOf(text, 'floodgate_rlqs_actions_total{reason="push"}')! >= 1, 'the push to a counted');
    assert.equal(valueOf(text, 'floodgate_rlqs_ledger_errors_total{kind="grant"}'), 0);
    // Each first report came before any assignment: nothing to over-report against. Redis kept its records.
    assert.equal(valueOf(text, 'floodgate_rlqs_over_reports_total'), 0);
    assert.equal(valueOf(text, 'floodgate_rlqs_ledger_losses_total'), 0);
    // Scraped again with nothing new: the counters stay where they are.
    assert.equal(valueOf(await scrape(service), 'floodgate_rlqs_reports_total'), 2);
  });

  it('count a stream ended for a bad report, and ledger errors while Redis is away', async () => {
    const bad = new RlqsClient(service.grpcPort);
    clients.push(bad);
    bad.report('', [API], 1);
    await bad.ended();
    await redis.kill(0);
    const c = new RlqsClient(service.grpcPort);
    clients.push(c);
    c.report('edge', [API], 1);
    await c.ended(10_000);
    const text = await scrape(service);
    assert.equal(valueOf(text, 'floodgate_rlqs_stream_errors_total{kind="INVALID_REPORT"}'), 1);
    assert.ok(valueOf(text, 'floodgate_rlqs_ledger_errors_total{kind="grant"}')! >= 1, 'the failed grant counted');
    assert.ok(valueOf(text, 'floodgate_rlqs_stream_errors_total{kind="INTERNAL"}')! >= 1, 'its stream ended');
  });
});
