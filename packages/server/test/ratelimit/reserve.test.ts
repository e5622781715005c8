/**
 * `POST /v1/reserve` (a reservation on a smooth limit, answered as a wait), through a real HTTP
 * client against real services on loopback ports:
 * - Guava's own RateLimiterTest vectors (packages/floodgate/test/smooth/guava-vectors.json), each
 *   acquire and tryAcquire sent as a reservation and its wait slept on Guava's fake stopwatch,
 *   give Guava's waits to the microsecond: on the memory store, and on one Redis with the steps
 *   sent round-robin to three services (each its own Redis client), so the fleet answers as one
 *   Guava limiter;
 * - twelve reservations sent at once to three services on one Redis get waits 0, 1/rate, 2/rate...
 *   (bursty), and the warm-up integral's waits (warming up), exactly;
 * - the config section and malformed requests, each refused naming what is wrong.
 * The time is Guava's fake stopwatch (on Redis, the store's test mode: the scripts take it too).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { RedisStore, ioredisAdapter } from 'floodgate/redis';
import { SmoothRateLimiter, type Clock, type Store } from 'floodgate';
import { request } from 'undici';
import { FakeStopwatch } from '../../../floodgate/test/smooth/fake-stopwatch.js';
import { GUAVA_VECTORS, type GuavaOp, type GuavaVector } from '../../../floodgate/test/smooth/guava-vectors.js';
import { useRedis } from '../../../floodgate/test/redis/setup.js';
import {
  createRateLimitService,
  formatConfigError,
  parseDescriptorConfig,
  startRateLimitServers,
  type RateLimitServers,
} from '../../src/ratelimit/index.js';
import { domainsOf } from './support.js';

/**
 * The vectors a reservation API can replay: finite rates (a config takes those only), no setRate
 * (a limit's rate is its config's), and nothing between `create` and the first acquire, since a
 * key's limiter is created by its first reservation (as the Redis limiter's is) where Guava's
 * test creates it before sleeping: testOneSecondBurst is left out for that.
 */
const RUNNABLE = Object.entries(GUAVA_VECTORS).filter(
  ([, v]) =>
    v.ops.every((op) => typeof (op.rate ?? 0) === 'number' && op.op !== 'setRate') &&
    ['acquire', 'tryAcquire'].includes(v.ops[1]!.op),
);

/** configOf returns the smooth limit a vector's create step makes, as config. */
function configOf(create: GuavaOp): string {
  const kind =
    create.op === 'createWarmingUp'
      ? `warmup_ms: ${create.warmupMs!}, cold_factor: ${create.coldFactor!}`
      : 'max_burst_seconds: 1';
  return `domain: guava\nsmooth_limits:\n  - { name: v, permits_per_second: ${create.rate as number}, ${kind} }\n`;
}

interface Answer {
  readonly status: number;
  readonly body: {
    admitted?: boolean;
    waitMs?: number | null;
    error?: { code: string; field?: string; message: string };
  };
}

async function reserve(port: number, body: unknown): Promise<Answer> {
  const res = await request(`http://127.0.0.1:${port}/v1/reserve`, {
    method: 'POST',
    body: JSON.stringify(body),
    headers: { 'content-type': 'application/json' },
  });
  return { status: res.statusCode, body: (await res.body.json()) as Answer['body'] };
}

/** Services are services on one store each (or sharing one Redis), with their HTTP ports. */
interface Services {
  readonly ports: readonly number[];
  close(): Promise<void>;
}

async function startServices(config: string, stores: readonly Store[], clock: Clock): Promise<Services> {
  const running: RateLimitServers[] = [];
  for (const store of stores) {
    const service = createRateLimitService({ domains: domainsOf(config), store, clock });
    running.push(await startRateLimitServers({ service, httpPort: 0 }));
  }
  return {
    ports: running.map((r) => r.httpPort!),
    close: async () => {
      for (const r of running) await r.close();
    },
  };
}

/** replay sends a vector's steps, the n-th reservation to `ports[n % ports.length]`, sleeping each wait on `time`. */
async function replay(vector: GuavaVector, ports: readonly number[], time: FakeStopwatch, key: string): Promise<void> {
  let n = 0;
  const ask = async (permits: number, maxWaitMs: number | undefined): Promise<Answer> => {
    const answer = await reserve(ports[n++ % ports.length]!, { domain: 'guava', name: 'v', key, permits, maxWaitMs });
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    return answer;
  };
  for (const op of vector.ops.slice(1)) {
    if (op.op === 'sleepMillis') time.sleepMillis(op.ms!);
    else if (op.op === 'advanceNanos') time.advanceNanos(BigInt(op.nanos!));
    else if (op.op === 'acquire')
      for (let i = 0; i < (op.repeat ?? 1); i++) {
        const { body } = await ask(op.permits ?? 1, undefined);
        assert.equal(body.admitted, true);
        await time.sleep(body.waitMs!);
      }
    else if (op.op === 'tryAcquire') {
      const { body } = await ask(op.permits ?? 1, op.timeoutMicros! / 1000);
      assert.equal(body.admitted, op.expect, JSON.stringify(op));
      if (body.admitted === true) await time.sleep(body.waitMs!);
      else assert.equal(body.waitMs, null);
    } else throw new Error(`unknown step ${op.op}`);
  }
}

describe("Guava's RateLimiterTest through POST /v1/reserve", () => {
  const redis = useRedis();

  it('replays the vectors a reservation API can (12 of 22)', () => {
    assert.deepEqual(
      RUNNABLE.map(([name]) => name),
      [
        'testSimple',
        'testSimpleWithWait',
        'testSimpleAcquireReturnValues',
        'testSimpleAcquireEarliestAvailableIsInPast',
        'testWarmUp',
        'testWarmUpWithColdFactor',
        'testWarmUpWithColdFactor1',
        'testTryAcquire_noWaitAllowed',
        'testTryAcquire_someWaitAllowed',
        'testTryAcquire_overflow',
        'testTryAcquire_negative',
        'testSimpleWeights',
      ],
    );
  });

  for (const [name, vector] of RUNNABLE) {
    it(`${name}, on the memory store`, async () => {
      const time = new FakeStopwatch();
      const services = await startServices(configOf(vector.ops[0]!), [undefined as unknown as Store], time.clock);
      try {
        await replay(vector, services.ports, time, name);
      } finally {
        await services.close();
      }
      assert.deepEqual(time.events, vector.events);
      assert.deepEqual(time.eventMicros, vector.eventMicros);
    });

    it(`${name}, on one Redis, asked round-robin through three services`, async () => {
      const time = new FakeStopwatch();
      const clients = [0, 1, 2].map(() => redis().client.duplicate());
      const stores = clients.map(
        (client) =>
          new RedisStore({
            adapter: ioredisAdapter(client),
            unsafeTestTime: true,
            clock: time.clock,
            timers: time.clock,
            timeoutMs: 5000,
            onError: 'throw',
          }),
      );
      const services = await startServices(configOf(vector.ops[0]!), stores, time.clock);
      try {
        await replay(vector, services.ports, time, `redis-${name}`);
      } finally {
        await services.close();
        for (const c of clients) c.disconnect();
      }
      assert.deepEqual(time.events, vector.events);
      assert.deepEqual(time.eventMicros, vector.eventMicros);
    });
  }
});

describe('several callers at once on one Redis', () => {
  const redis = useRedis();
  let time: FakeStopwatch;
  let clients: Array<ReturnType<ReturnType<typeof redis>['client']['duplicate']>>;
  let services: Services;
  const CONFIG = `domain: fleet
smooth_limits:
  - { name: bursty, permits_per_second: 50 }
  - { name: warm, permits_per_second: 50, warmup_ms: 200 }
`;
  before(async () => {
    time = new FakeStopwatch();
    time.advanceNanos(1_000_000_000_000n);
    clients = [0, 1, 2].map(() => redis().client.duplicate());
    const stores = clients.map(
      (client) =>
        new RedisStore({
          adapter: ioredisAdapter(client),
          unsafeTestTime: true,
          clock: time.clock,
          timers: time.clock,
          timeoutMs: 5000,
          onError: 'throw',
        }),
    );
    services = await startServices(CONFIG, stores, time.clock);
  });
  after(async () => {
    await services?.close();
    for (const c of clients ?? []) c.disconnect();
  });

  /** twelveAtOnce sends 12 reservations on `name` at one moment, four through each service, and returns their waits in µs, sorted. */
  async function twelveAtOnce(name: string): Promise<number[]> {
    const answers = await Promise.all(
      Array.from({ length: 12 }, (_, i) => reserve(services.ports[i % 3]!, { domain: 'fleet', name, key: 'k' })),
    );
    return answers.map((a) => Math.round(a.body.waitMs! * 1000)).sort((a, b) => a - b);
  }

  it('bursty: the fleet’s waits are spaced by 1/rate, the first free', async () => {
    assert.deepEqual(
      await twelveAtOnce('bursty'),
      Array.from({ length: 12 }, (_, i) => i * 20_000),
    );
  });

  it('warming up: the waits follow the warm-up integral, as one in-process limiter’s', async () => {
    const one = SmoothRateLimiter.warmingUp(50, 200, { clock: time.clock });
    const nowMicros = time.clock.now() * 1000;
    const expected = Array.from({ length: 12 }, () => one.reserveAt(1, nowMicros));
    assert.deepEqual(await twelveAtOnce('warm'), expected);
    assert.ok(expected[1]! > 20_000, 'a cold permit costs more than the stable interval');
  });
});

describe('POST /v1/reserve refuses what is malformed, naming it', () => {
  let services: Services;
  before(async () => {
    services = await startServices(
      'domain: d\nsmooth_limits:\n  - { name: s, permits_per_second: 1 }\n',
      [undefined as unknown as Store],
      new FakeStopwatch().clock,
    );
  });
  after(() => services.close());

  const bad: ReadonlyArray<readonly [unknown, string, RegExp]> = [
    [[], 'request', /must be an object/],
    [{ domain: 'd' }, 'name', /non-empty string/],
    [{ name: 's' }, 'domain', /non-empty string/],
    [{ domain: 'd', name: 's', wait: 1 }, 'wait', /not a field/],
    [{ domain: 'd', name: 's', permits: 0 }, 'permits', /whole number from 1/],
    [{ domain: 'd', name: 's', permits: 1.5 }, 'permits', /whole number from 1/],
    [{ domain: 'd', name: 's', maxWaitMs: '10' }, 'maxWaitMs', /finite number/],
    [{ domain: 'd', name: 's', key: 7 }, 'key', /must be a string/],
    [{ domain: 'd', name: 's', key: 'k'.repeat(1025) }, 'key', /at most 1024/],
    [{ domain: 'd', name: 'other' }, 'name', /declares s/],
    [{ domain: 'elsewhere', name: 's' }, 'name', /declares none/],
  ];
  for (const [body, field, message] of bad)
    it(`400 for ${JSON.stringify(body).slice(0, 60)}`, async () => {
      const answer = await reserve(services.ports[0]!, body);
      assert.equal(answer.status, 400);
      assert.equal(answer.body.error?.code, 'INVALID_REQUEST');
      assert.equal(answer.body.error?.field, field);
      assert.match(answer.body.error!.message, message);
    });
});

describe('smooth_limits in the descriptor config', () => {
  it('reads bursty and warming-up limits, with their defaults', () => {
    const [domain] = domainsOf(
      'domain: d\nsmooth_limits:\n  - { name: a, permits_per_second: 2 }\n  - { name: b, permits_per_second: 5, warmup_ms: 1000 }\n',
    );
    assert.deepEqual(
      domain!.smoothLimits!.map(({ name, permitsPerSecond, model }) => ({ name, permitsPerSecond, model })),
      [
        { name: 'a', permitsPerSecond: 2, model: { kind: 'bursty', maxBurstSeconds: 1 } },
        { name: 'b', permitsPerSecond: 5, model: { kind: 'warmingUp', warmupMs: 1000, coldFactor: 3 } },
      ],
    );
  });

  const errors: ReadonlyArray<readonly [string, string]> = [
    ['smooth_limits: 3', 'smooth_limits: must be a list of smooth limits'],
    ['smooth_limits:\n  - { permits_per_second: 1 }', 'smooth_limits[0].name: is required'],
    ['smooth_limits:\n  - { name: "a b", permits_per_second: 1 }', 'smooth_limits[0].name: must be 1 to 64 of'],
    ['smooth_limits:\n  - { name: a }', 'smooth_limits[0].permits_per_second: is required'],
    [
      'smooth_limits:\n  - { name: a, permits_per_second: 0 }',
      'smooth_limits[0].permits_per_second: must be a number above 0',
    ],
    [
      'smooth_limits:\n  - { name: a, permits_per_second: 1, warmup_ms: 10, max_burst_seconds: 1 }',
      'smooth_limits[0].max_burst_seconds: is for a bursty limit',
    ],
    [
      'smooth_limits:\n  - { name: a, permits_per_second: 1, cold_factor: 2 }',
      'smooth_limits[0].cold_factor: is for a warming-up limit',
    ],
    [
      'smooth_limits:\n  - { name: a, permits_per_second: 1, warmup_ms: 0 }',
      'smooth_limits[0].warmup_ms: must be a finite number, at least 0.001',
    ],
    [
      'smooth_limits:\n  - { name: a, permits_per_second: 1, warmup_ms: 5, cold_factor: 0.5 }',
      'smooth_limits[0].cold_factor: must be a finite number, at least 1',
    ],
    [
      'smooth_limits:\n  - { name: a, permits_per_second: 1, max_burst_seconds: -1 }',
      'smooth_limits[0].max_burst_seconds: must be a finite number, at least 0',
    ],
    ['smooth_limits:\n  - { name: a, permits_per_second: 1, rate: 2 }', 'smooth_limits[0].rate: unknown key'],
    [
      'smooth_limits:\n  - { name: a, permits_per_second: 1 }\n  - { name: a, permits_per_second: 2 }',
      'smooth_limits[1].name: "a" is already defined at x.yaml:3:5',
    ],
  ];
  for (const [section, message] of errors)
    it(`refuses ${section.split('\n').at(-1)!.trim()}`, () => {
      const parsed = parseDescriptorConfig(`domain: d\n${section}\n`, 'x.yaml');
      assert.ok('errors' in parsed, 'refused');
      const texts = parsed.errors.map(formatConfigError);
      assert.ok(
        texts.some((t) => t.includes(message)),
        `${texts.join('\n')}\ndoes not say ${message}`,
      );
    });
});
