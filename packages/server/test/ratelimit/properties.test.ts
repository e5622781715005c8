import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { RedisStore, ioredisAdapter } from 'floodgate/redis';
import { useRedis } from '../../../floodgate/test/redis/setup.js';
import fc from 'fast-check';
import { ManualClock, MemoryStore, type Store } from 'floodgate';
import { createRateLimitService, DecisionError, parseDecisionRequest } from '../../src/ratelimit/index.js';
import { domainsOf, START_MS } from './support.js';
import { PromiseStore } from './support.js';
import { runs } from '../../../floodgate/test/support/sweep.js';

// Redis decides every request in these tests, however loaded the machine: a fixed, generous timeout
// (the adaptive default would cut a call off at 3x the recent p99, and a fallback would decide it).
const DECIDES = 5000;

const CONFIG = [
  'domain: p',
  'descriptors:',
  '  - key: a',
  '    rate_limit: { unit: year, requests_per_unit: 5 }',
  '  - key: b',
  '    rate_limit: { unit: year, requests_per_unit: 7, algorithm: sliding-window }',
  '  - key: c',
  '    shadow_mode: true',
  '    rate_limit: { unit: year, requests_per_unit: 3 }',
  '',
].join('\n');
const LIMIT: Record<string, number> = { a: 5, b: 7, c: 3 };

const descriptorArb = fc.record({
  key: fc.constantFrom('a', 'b', 'c'),
  value: fc.constantFrom('x', 'y'),
  hits: fc.integer({ min: 0, max: 4 }),
});
const requestArb = fc.array(descriptorArb, { minLength: 1, maxLength: 3 });

/**
 * The model: a request is admitted when every enforcing descriptor (a, b) with hits fits what is
 * left (the same counter twice counts twice) and every enforcing question (hits 0) has one hit
 * left before the request; then every such descriptor is charged, and each shadow one (c) that
 * fits too. A refused request charges nothing.
 */
function modelStep(
  charged: Map<string, number>,
  request: ReadonlyArray<{ key: string; value: string; hits: number }>,
): boolean {
  const trial = new Map(charged);
  let admitted = request.every(
    (d) => d.key === 'c' || d.hits > 0 || (charged.get(`${d.key}=${d.value}`) ?? 0) + 1 <= LIMIT[d.key]!,
  );
  for (const d of request) {
    if (d.key === 'c' || d.hits === 0) continue;
    const id = `${d.key}=${d.value}`;
    const after = (trial.get(id) ?? 0) + d.hits;
    if (after > LIMIT[d.key]!) admitted = false;
    trial.set(id, after);
  }
  if (!admitted) return false;
  for (const d of request) {
    if (d.key !== 'c' || d.hits === 0) continue;
    const id = `${d.key}=${d.value}`;
    if ((trial.get(id) ?? 0) + d.hits <= LIMIT.c!) trial.set(id, (trial.get(id) ?? 0) + d.hits);
  }
  for (const [k, v] of trial) charged.set(k, v);
  return true;
}

function toRequest(request: ReadonlyArray<{ key: string; value: string; hits: number }>) {
  return parseDecisionRequest({
    domain: 'p',
    descriptors: request.map((d) => ({
      entries: [{ key: d.key, value: d.value }],
      hits_addend: { value: String(d.hits) },
    })),
  });
}

/** allOrNothing checks the service on `makeStore()` stores against the model over `numRuns` random runs. */
async function allOrNothing(makeStore: () => Store, numRuns: number): Promise<void> {
  await fc.assert(
    fc.asyncProperty(fc.array(requestArb, { minLength: 1, maxLength: 25 }), async (requests) => {
      const service = createRateLimitService({
        domains: domainsOf(CONFIG),
        clock: new ManualClock(START_MS),
        store: makeStore(),
      });
      const charged = new Map<string, number>();
      for (const request of requests) {
        const result = await service.shouldRateLimit(toRequest(request));
        assert.equal(result.overallCode === 'OK', modelStep(charged, request), JSON.stringify(request));
      }
      for (const key of ['a', 'b', 'c']) {
        for (const value of ['x', 'y']) {
          const peek = await service.shouldRateLimit(
            parseDecisionRequest({ domain: 'p', descriptors: [{ entries: [{ key, value }] }] }),
            'peek',
          );
          assert.equal(
            peek.statuses[0]!.limitRemaining,
            LIMIT[key]! - (charged.get(`${key}=${value}`) ?? 0),
            `${key}=${value}`,
          );
        }
      }
    }),
    { numRuns: runs(numRuns) },
  );
}

describe("properties: every verdict and every counter is the all-or-nothing model's (a refused request is charged nowhere)", () => {
  const redis = useRedis();
  let run = 0;

  it('on the memory store', () => allOrNothing(() => new MemoryStore(), 100));
  it('on an asynchronous store without consumeAll', () => allOrNothing(() => new PromiseStore(), 100));
  it('on a real Redis (one script per request)', () =>
    allOrNothing(
      () =>
        new RedisStore({
          timeoutMs: DECIDES,
          adapter: ioredisAdapter(redis().client),
          prefix: `prop${run++}:`,
          onError: 'throw',
        }),
      30,
    ));
});

describe('properties of request parsing', () => {
  it('any JSON value is a checked request or a DecisionError, and a checked one is decided without a crash', async () => {
    const service = createRateLimitService({ domains: domainsOf(CONFIG), clock: new ManualClock(START_MS) });
    const entry = fc.record(
      {
        key: fc.oneof(fc.string(), fc.constant('a'), fc.integer()),
        value: fc.oneof(fc.string(), fc.constant('x'), fc.constant(null)),
      },
      { requiredKeys: [] },
    );
    const descriptor = fc.record(
      {
        entries: fc.oneof(fc.array(entry, { maxLength: 3 }), fc.anything()),
        hits_addend: fc.oneof(fc.integer(), fc.double(), fc.string(), fc.record({ value: fc.string() })),
        limit: fc.anything(),
      },
      { requiredKeys: [] },
    );
    const body = fc.oneof(
      fc.anything(),
      fc.record(
        {
          domain: fc.oneof(fc.constant('p'), fc.string(), fc.integer()),
          descriptors: fc.oneof(fc.array(descriptor, { maxLength: 4 }), fc.anything()),
          hits_addend: fc.oneof(fc.integer(), fc.double(), fc.bigInt().map(String)),
        },
        { requiredKeys: [] },
      ),
    );
    await fc.assert(
      fc.asyncProperty(body, async (raw) => {
        let request;
        try {
          request = parseDecisionRequest(raw);
        } catch (error) {
          assert.ok(error instanceof DecisionError && error.code === 'INVALID_REQUEST', String(error));
          return;
        }
        const result = await service.shouldRateLimit(request);
        assert.equal(result.statuses.length, request.descriptors.length);
      }),
      { numRuns: runs(500) },
    );
  });
});
