/**
 * The neighbour test: an exhausted user sending 60 concurrent requests from one IP must never get
 * other users on that IP refused by the `ip` limit. A gate that charged `ip` first and refunded it
 * once `user` refused would let those 60 in-flight charges exhaust `ip` for a moment; deciding the
 * limits together charges nothing for a refused request, so the neighbours always pass.
 * 100 trials per adapter, on a real Redis and on a store that answers after 5 ms.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { Agent, fetch } from 'undici';
import { byHeader, byIp, type HttpLimitOptions } from '../../src/http/index.js';
import { Limiter, tokenBucket, MemoryStore } from '../../src/index.js';
import { ioredisAdapter, RedisStore } from '../../src/redis.js';
import { startRedisServer, type RedisServers } from '../support/redis-server.js';
import { asyncStore } from './support.js';
import { adapters, type Running } from './servers.js';

const TRIALS = 100;
/** Trials run at once on one adapter, each on its own client IP. */
const PARALLEL = 5;
const EXHAUSTED_REQUESTS = 60;
const NEIGHBOURS = 3;
/** Room for the exhausted user's one admitted request, the neighbours, and one spare. */
const IP_LIMIT = 1 + NEIGHBOURS + 1;

let redis: RedisServers;
let client: Redis;
const agent = new Agent({ connections: 128, pipelining: 1 });

before(async () => {
  redis = await startRedisServer();
  client = new Redis({ host: '127.0.0.1', port: redis.ports[0]!, maxRetriesPerRequest: 1 });
  await client.ping();
});

after(async () => {
  client?.disconnect();
  await redis?.stop();
  await agent.close();
});

interface Reply {
  status: number;
  violated: unknown;
}

async function get(url: string, ip: string, user: string): Promise<Reply> {
  const res = await fetch(`${url}/ok`, {
    headers: { 'x-forwarded-for': ip, 'x-user': user },
    signal: AbortSignal.timeout(10_000),
    dispatcher: agent,
  });
  const body = await res.text();
  return {
    status: res.status,
    violated:
      res.status === 200 ? undefined : (JSON.parse(body) as { 'violated-policies': unknown })['violated-policies'],
  };
}

/** One trial on client IP `ip`: exhaust a user, then flood with it while neighbours ask once each. */
async function trial(url: string, ip: string, trialId: string): Promise<{ wrong: Reply[]; exhausted: Reply[] }> {
  const exhausted = `a-${trialId}`;
  assert.equal((await get(url, ip, exhausted)).status, 200, 'the first request of the user is admitted');
  const flood = Array.from({ length: EXHAUSTED_REQUESTS }, () => get(url, ip, exhausted));
  const neighbours = Array.from({ length: NEIGHBOURS }, (_, k) => get(url, ip, `b${k}-${trialId}`));
  const [a, b] = await Promise.all([Promise.all(flood), Promise.all(neighbours)]);
  return { wrong: b.filter((r) => r.status !== 200), exhausted: a };
}

type StoreKind = 'redis' | 'delayed 5 ms';

function optionsFor(kind: StoreKind, prefix: string): HttpLimitOptions<unknown> {
  // A deadline far above any round trip: this test is about a race between requests, not about timeouts
  // (a consumeAll that timed out while its script still ran would be retried limit by limit).
  const store =
    kind === 'redis'
      ? new RedisStore({ adapter: ioredisAdapter(client), prefix, timeoutMs: 30_000 })
      : asyncStore(new MemoryStore(), 5);
  // The same for the delayed store, whose calls the Limiter guards: its adaptive default (3x the p99,
  // from 25 ms) cut calls off on a loaded machine, and the failure policy then decided for them.
  const timeoutMs = kind === 'redis' ? undefined : 30_000;
  const ip = new Limiter({
    policy: tokenBucket({ capacity: IP_LIMIT, refillPerSecond: IP_LIMIT / 1e6 }),
    store,
    timeoutMs,
  });
  // Buckets that refill too slowly to matter in a run: no wall-clock window boundary resets them mid-trial.
  const user = new Limiter({ policy: tokenBucket({ capacity: 1, refillPerSecond: 1e-6 }), store, timeoutMs });
  return {
    trustProxy: 1,
    dimensions: [
      { name: 'ip', limiter: ip, key: byIp() },
      { name: 'user', limiter: user, key: byHeader('x-user') },
    ],
  };
}

describe('neighbours of an exhausted user on one IP are never refused by the ip limit', () => {
  const kinds: StoreKind[] = ['redis', 'delayed 5 ms'];
  kinds.forEach((kind, k) => {
    Object.keys(adapters).forEach((name, a) => {
      it(`${name}, ${kind}: ${TRIALS} trials, 0 wrong refusals`, async () => {
        const running: Running = await adapters[name]!(optionsFor(kind, `neighbour:${Date.now()}:${name}:`));
        const wrong: Reply[] = [];
        let floodNotByUser = 0;
        try {
          for (let t = 0; t < TRIALS; t += PARALLEL) {
            const batch = Array.from({ length: PARALLEL }, (_, p) => {
              const id = t + p;
              return trial(running.url, `10.${k * 10 + a}.${id >> 8}.${id & 255}`, `${k}-${a}-${id}`);
            });
            for (const r of await Promise.all(batch)) {
              wrong.push(...r.wrong);
              floodNotByUser += r.exhausted.filter(
                (e) => e.status !== 429 || JSON.stringify(e.violated) !== '["user"]',
              ).length;
            }
          }
        } finally {
          await running.close();
        }
        assert.deepEqual(wrong, [], `${wrong.length} neighbours wrongly refused in ${TRIALS} trials`);
        assert.equal(floodNotByUser, 0, 'the flood is refused by its own limit alone');
      });
    });
  });
});
