import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FloodgateError, ManualClock, MemoryStore, type DecisionEvent, type Store } from 'floodgate';
import {
  createRateLimitService,
  DecisionError,
  parseDecisionRequest,
  startRateLimitServers,
  type RateLimitService,
} from '../../src/ratelimit/index.js';
import { domainsOf, fixtureDomains, START_MS } from './support.js';
import { PromiseStore } from './support.js';

/** A store whose every call fails, as a store whose backend is down does. */
const brokenStore: Store = {
  bind: () => ({
    synchronous: false,
    consume: () => Promise.reject(new Error('connection refused')),
    peek: () => Promise.reject(new Error('connection refused')),
    refund: () => Promise.reject(new Error('connection refused')),
    reset: () => Promise.reject(new Error('connection refused')),
  }),
};

const CONFIG = [
  'domain: app',
  'descriptors:',
  '  - key: user',
  '    rate_limit: { unit: minute, requests_per_unit: 3 }',
  '  - key: team',
  '    rate_limit: { unit: minute, requests_per_unit: 1 }',
  '  - key: trial',
  '    shadow_mode: true',
  '    rate_limit: { unit: minute, requests_per_unit: 2 }',
  '  - key: bucket',
  '    rate_limit: { unit: minute, requests_per_unit: 60, algorithm: token-bucket }',
  '  - key: smooth',
  '    rate_limit: { unit: minute, requests_per_unit: 6, algorithm: gcra }',
  '  - key: sliding',
  '    rate_limit: { unit: minute, requests_per_unit: 10, algorithm: sliding-window }',
  '',
].join('\n');

/** ask decides `pairs` as one request of `hits` each; hits 0 asks without counting (mode peek). */
function ask(service: RateLimitService, pairs: Array<[string, string]>, hits?: number) {
  const request = parseDecisionRequest({
    domain: 'app',
    hits_addend: hits,
    descriptors: pairs.map(([key, value]) => ({ entries: [{ key, value }] })),
  });
  return service.shouldRateLimit(request, hits === 0 ? 'peek' : 'consume');
}

for (const [name, makeStore] of [
  ['the memory store', () => new MemoryStore()],
  ['an asynchronous store without consumeAll', () => new PromiseStore()],
] as const) {
  describe(`decision service on ${name}`, () => {
    it('a refused request is charged nowhere; a shadow limit is charged only for admitted requests', async () => {
      const service = createRateLimitService({
        domains: domainsOf(CONFIG),
        clock: new ManualClock(START_MS),
        store: makeStore(),
      });
      assert.equal(
        (
          await ask(service, [
            ['user', 'a'],
            ['team', 't'],
            ['trial', 'x'],
          ])
        ).overallCode,
        'OK',
      );
      const refused = await ask(service, [
        ['user', 'a'],
        ['team', 't'],
        ['trial', 'x'],
      ]);
      assert.equal(refused.overallCode, 'OVER_LIMIT');
      assert.deepEqual(
        refused.statuses.map((s) => [s.code, s.limitRemaining]),
        [
          ['OK', 2],
          ['OVER_LIMIT', 0],
          ['OK', 1],
        ],
      );
      const after = await ask(service, [
        ['user', 'a'],
        ['trial', 'x'],
      ]);
      assert.deepEqual(
        after.statuses.map((s) => s.limitRemaining),
        [1, 0],
        'user and trial were charged once each by the refused request: not at all',
      );
      const shadowed = await ask(service, [
        ['user', 'a'],
        ['trial', 'x'],
      ]);
      assert.deepEqual(
        [shadowed.overallCode, shadowed.statuses[1]!.code, shadowed.statuses[1]!.shadowed],
        ['OK', 'OK', true],
      );
    });

    it('each algorithm counts as floodgate defines it', async () => {
      const clock = new ManualClock(START_MS);
      const service = createRateLimitService({ domains: domainsOf(CONFIG), clock, store: makeStore() });
      assert.equal((await ask(service, [['bucket', 'b']], 60)).statuses[0]!.limitRemaining, 0);
      clock.advance(30_000);
      assert.equal(
        (await ask(service, [['bucket', 'b']], 0)).statuses[0]!.limitRemaining,
        30,
        'half a minute refills half the bucket',
      );
      assert.equal((await ask(service, [['smooth', 's']], 6)).overallCode, 'OK');
      const gcraRefused = await ask(service, [['smooth', 's']]);
      assert.deepEqual(
        [gcraRefused.overallCode, gcraRefused.statuses[0]!.durationUntilResetMs],
        ['OVER_LIMIT', 10_000],
        'GCRA: one every 10 s',
      );
      await ask(service, [['sliding', 'w']], 10);
      clock.advance(60_000);
      assert.equal(
        (await ask(service, [['sliding', 'w']], 0)).statuses[0]!.limitRemaining,
        5,
        'half way into the next window, half of the previous one still weighs',
      );
    });
  });
}

describe('decision service', () => {
  it('reports a decision event per counted descriptor, named as Envoy names its statistics (detailed_metric)', async () => {
    const events: DecisionEvent[] = [];
    const domains = fixtureDomains('readme-examples.yaml');
    const service = createRateLimitService({
      domains,
      clock: new ManualClock(START_MS),
      observer: { decision: (e) => events.push(e) },
    });
    await service.shouldRateLimit(
      parseDecisionRequest({
        domain: 'example8',
        descriptors: [{ entries: [{ key: 'key1', value: 'free' }] }, { entries: [{ key: 'key1', value: 'value1' }] }],
      }),
    );
    await service.shouldRateLimit(
      parseDecisionRequest({
        domain: 'messaging',
        descriptors: [
          {
            entries: [
              { key: 'message_type', value: 'marketing' },
              { key: 'to_number', value: '2061111111' },
            ],
          },
        ],
      }),
    );
    assert.deepEqual(
      events.map((e) => [e.limiter, e.operation, e.decision.remaining]),
      [
        ['example8.key1_free', 'consume', 9],
        ['example8.key1_value1', 'consume', 19],
        ['messaging.message_type_marketing.to_number', 'consume', 4],
      ],
    );
  });

  it('reload swaps the rules and keeps the counters of unchanged limits', async () => {
    const service = createRateLimitService({ domains: domainsOf(CONFIG), clock: new ManualClock(START_MS) });
    await ask(service, [['user', 'r']]);
    service.reload(domainsOf(CONFIG.replace('domain: app', 'domain: app\n# reloaded')));
    assert.equal((await ask(service, [['user', 'r']])).statuses[0]!.limitRemaining, 1);
    service.reload(domainsOf('domain: other\n'));
    assert.deepEqual(service.domains, ['other']);
    assert.equal((await ask(service, [['user', 'r']])).statuses[0]!.rule, undefined);
  });

  it('a failing store rejects with DecisionError STORE_FAILED carrying the cause', async () => {
    const service = createRateLimitService({ domains: domainsOf(CONFIG), store: brokenStore });
    await assert.rejects(ask(service, [['user', 'a']]), (e: DecisionError) => {
      assert.equal(e.code, 'STORE_FAILED');
      assert.match(e.message, /connection refused/);
      assert.ok(e.cause instanceof Error);
      return true;
    });
    assert.equal((await ask(service, [['unknown', 'a']])).overallCode, 'OK', 'no limit: no store call');
  });
});

describe('decision service limits on what requests can make it hold', () => {
  it('at most 4096 distinct limit overrides, then INVALID_REQUEST; known ones still served', async () => {
    const service = createRateLimitService({ domains: domainsOf(CONFIG), clock: new ManualClock(START_MS) });
    const withLimit = (rpu: number) =>
      parseDecisionRequest({
        domain: 'app',
        descriptors: [{ entries: [{ key: 'any', value: 'v' }], limit: { requests_per_unit: rpu, unit: 'HOUR' } }],
      });
    for (let rpu = 1; rpu <= 4096; rpu++) await service.shouldRateLimit(withLimit(rpu));
    await assert.rejects(
      service.shouldRateLimit(withLimit(5000)),
      (e: DecisionError) => e.code === 'INVALID_REQUEST' && /4096 distinct limit overrides/.test(e.message),
    );
    assert.equal((await service.shouldRateLimit(withLimit(7))).statuses[0]!.limitRemaining, 5);
  });
});

describe('decision service options', () => {
  it('bad domains, store or ports are INVALID_OPTION naming them', async () => {
    const option = (name: string) => (e: unknown) =>
      e instanceof FloodgateError && e.code === 'INVALID_OPTION' && e.option === name;
    assert.throws(() => createRateLimitService({ domains: 'api' as never }), option('domains'));
    assert.throws(() => createRateLimitService({ domains: [{ nope: 1 }] as never }), option('domains[0]'));
    assert.throws(
      () => createRateLimitService({ domains: [...domainsOf(CONFIG), ...domainsOf(CONFIG)] }),
      option('domains[1]'),
    );
    assert.throws(
      () => createRateLimitService({ domains: [], store: {} as never }),
      option('createRateLimitService.store'),
    );
    const service = createRateLimitService({ domains: domainsOf(CONFIG) });
    assert.throws(() => service.reload(null as never), option('domains'));
    assert.deepEqual(service.domains, ['app'], 'a refused reload changes nothing');
    await assert.rejects(
      startRateLimitServers({ service, grpcPort: 70_000 }),
      option('startRateLimitServers.grpcPort'),
    );
    await assert.rejects(startRateLimitServers({ service, httpPort: 1.5 }), option('startRateLimitServers.httpPort'));
    await assert.rejects(startRateLimitServers({ service }), option('grpcPort'));
  });
});
