/**
 * The failure matrix: every adapter, over every kind of store (memory, a real Redis, a real Redis
 * Cluster, custom stores failing three ways), with each failure policy, and Redis really absent (a
 * closed port) and really hung (SIGSTOP). Each case asserts status, body, headers, what was charged
 * where, and what was logged and observed: no 500 unless the application asked for the error, no
 * unhandled rejection, no hang.
 */
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { Cluster, Redis } from 'ioredis';
import { byHeader, type HttpLimitOptions, type StoreErrorPolicy } from '../../src/http/index.js';
import {
  Limiter,
  tokenBucket,
  MemoryStore,
  type LimiterOptions,
  type Observer,
  type Store,
  type StoreErrorEvent,
} from '../../src/index.js';
import { disconnectIoredis, ioredisAdapter, RedisStore, type OnError } from '../../src/redis.js';
import { startRedisCluster, startRedisServer, type RedisServers } from '../support/redis-server.js';
import { failingCustomStore, type FailingKind } from './failure-stores.js';
import { adapters, type Running } from './servers.js';

const USER_LIMIT = 4;
const REQUESTS = 5;
const IP_LIMIT = 100;
const REQUEST_TIMEOUT_MS = 5000;

/**
 * A bucket of `capacity` that refills too slowly to matter within a case: unlike a fixed window,
 * no boundary of the wall clock can reset it in the middle of one.
 */
const slowBucket = (capacity: number) => tokenBucket({ capacity, refillPerSecond: capacity / 1e6 });

/** How a case must be answered. */
type Answer = 'ok' | 'fail-open' | 'fail-closed' | 'fallback' | 'local-whole' | 'app-error';

/** A store for one adapter in one case, and how to let go of its client. */
interface Opened {
  store: Store;
  close(): Promise<void> | void;
}

interface Backend {
  name: string;
  /** True for custom stores: the limiter holds their deadline and failure policy (its `onError`, `timeoutMs`). */
  custom?: boolean;
  /** Opens a store (ready to use) with the store-level failure policy, when it has one. */
  open(onError: OnError | undefined, prefix: string, observer: Observer): Promise<Opened>;
  /** Breaks the backend for the case (SIGSTOP), and mends it after. */
  breakIt?(): void;
  mend?(): void;
}

let redis: RedisServers;
let cluster: RedisServers;
let closedPort: number;
const unhandled: unknown[] = [];
const onUnhandled = (reason: unknown): void => void unhandled.push(reason);

before(async () => {
  process.on('unhandledRejection', onUnhandled);
  [redis, cluster, closedPort] = await Promise.all([
    startRedisServer(),
    startRedisCluster({ nodeTimeoutMs: 60_000 }),
    freeClosedPort(),
  ]);
});

after(async () => {
  process.off('unhandledRejection', onUnhandled);
  await Promise.all([redis?.stop(), cluster?.stop()]);
});

/** A loopback port nothing listens on: bound, then closed. */
async function freeClosedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** A short deadline where Redis is broken (so the case is quick), a generous one where it works (so a busy machine is no outage). */
function redisStore(
  client: Redis | Cluster,
  onError: OnError | undefined,
  prefix: string,
  observer: Observer,
  working = false,
): RedisStore {
  const timeoutMs = working ? 2000 : 100;
  return new RedisStore({
    adapter: ioredisAdapter(client),
    prefix,
    timeoutMs,
    probeIntervalMs: 200,
    observer,
    ...(onError === undefined ? {} : { onError }),
  });
}

async function standalone(port: number, ready: boolean): Promise<Redis> {
  const client = new Redis({ host: '127.0.0.1', port, maxRetriesPerRequest: 1, retryStrategy: () => 100 });
  client.on('error', () => {});
  if (ready) await client.ping();
  return client;
}

async function clusterClient(): Promise<Cluster> {
  const client = new Cluster(
    cluster.ports.slice(0, 3).map((port) => ({ host: '127.0.0.1', port })),
    { redisOptions: { maxRetriesPerRequest: 1 } },
  );
  client.on('error', () => {});
  if (client.status !== 'ready') await new Promise((resolve) => client.once('ready', resolve));
  return client;
}

const backends: Record<string, Backend> = {
  memory: { name: 'memory', open: async () => ({ store: new MemoryStore(), close: () => {} }) },
  redis: {
    name: 'redis',
    open: async (onError, prefix, observer) => {
      const client = await standalone(redis.ports[0]!, true);
      return { store: redisStore(client, onError, prefix, observer, true), close: () => client.disconnect() };
    },
  },
  'redis absent (closed port)': {
    name: 'redis absent',
    open: async (onError, prefix, observer) => {
      const client = await standalone(closedPort, false);
      return { store: redisStore(client, onError, prefix, observer), close: () => client.disconnect() };
    },
  },
  'redis hung (SIGSTOP)': {
    name: 'redis hung',
    open: async (onError, prefix, observer) => {
      const client = await standalone(redis.ports[0]!, true);
      return { store: redisStore(client, onError, prefix, observer), close: () => client.disconnect() };
    },
    breakIt: () => redis.signal(0, 'SIGSTOP'),
    mend: () => redis.signal(0, 'SIGCONT'),
  },
  'redis cluster': {
    name: 'cluster',
    open: async (onError, prefix, observer) => {
      const client = await clusterClient();
      return { store: redisStore(client, onError, prefix, observer, true), close: () => disconnectIoredis(client) };
    },
  },
  'redis cluster hung (SIGSTOP every node)': {
    name: 'cluster hung',
    open: async (onError, prefix, observer) => {
      const client = await clusterClient();
      return { store: redisStore(client, onError, prefix, observer), close: () => disconnectIoredis(client) };
    },
    breakIt: () => cluster.ports.forEach((_, i) => cluster.signal(i, 'SIGSTOP')),
    mend: () => cluster.ports.forEach((_, i) => cluster.signal(i, 'SIGCONT')),
  },
};

function customBackend(kind: FailingKind): Backend {
  return { name: kind, custom: true, open: async () => ({ store: failingCustomStore(kind), close: () => {} }) };
}

/**
 * One case: a backend, its failure policy (`onError` of the RedisStore, or of the Limiter for a
 * custom store) and the gate's `onStoreError`, and the answer due.
 */
interface Case {
  backend: Backend;
  onError: OnError | undefined;
  onStoreError: StoreErrorPolicy | undefined;
  answer: Answer;
}

const fallback: OnError = { fallback: 'local', share: 0.5 };
const cases: Case[] = [];
for (const name of ['memory', 'redis', 'redis cluster'])
  cases.push({ backend: backends[name]!, onError: undefined, onStoreError: undefined, answer: 'ok' });
for (const name of ['redis absent (closed port)', 'redis hung (SIGSTOP)', 'redis cluster hung (SIGSTOP every node)']) {
  // The default: a local fallback with this process's share (one process seen: the whole limit).
  cases.push({ backend: backends[name]!, onError: undefined, onStoreError: undefined, answer: 'local-whole' });
  cases.push({ backend: backends[name]!, onError: 'fail-open', onStoreError: undefined, answer: 'fail-open' });
  cases.push({ backend: backends[name]!, onError: 'fail-closed', onStoreError: undefined, answer: 'fail-closed' });
  cases.push({ backend: backends[name]!, onError: fallback, onStoreError: undefined, answer: 'fallback' });
  cases.push({ backend: backends[name]!, onError: 'throw', onStoreError: undefined, answer: 'fail-open' });
  cases.push({ backend: backends[name]!, onError: 'throw', onStoreError: 'fail-closed', answer: 'fail-closed' });
}
for (const kind of ['floodgate-error', 'plain-error', 'never-answers'] as const) {
  cases.push({ backend: customBackend(kind), onError: undefined, onStoreError: undefined, answer: 'fail-open' });
  cases.push({ backend: customBackend(kind), onError: 'fail-closed', onStoreError: undefined, answer: 'fail-closed' });
  cases.push({ backend: customBackend(kind), onError: 'throw', onStoreError: undefined, answer: 'fail-open' });
  cases.push({ backend: customBackend(kind), onError: 'throw', onStoreError: 'fail-closed', answer: 'fail-closed' });
  cases.push({ backend: customBackend(kind), onError: 'throw', onStoreError: 'throw', answer: 'app-error' });
}

/** What one adapter saw in one case. */
interface Seen {
  adapter: string;
  responses: { status: number; headers: Headers; body: string }[];
  ipLeft: number;
  userLeft: number | undefined;
  logs: string[];
  gateEvents: StoreErrorEvent[];
  storeEvents: StoreErrorEvent[];
}

async function runAdapter(
  c: Case,
  adapter: string,
  index: number,
): Promise<{ seen: () => Promise<Seen>; start: () => Promise<Running>; close: () => Promise<void> | void }> {
  const logs: string[] = [];
  const gateEvents: StoreErrorEvent[] = [];
  const storeEvents: StoreErrorEvent[] = [];
  const storeObserver: Observer = { storeError: (e) => void storeEvents.push(e) };
  const opened = await c.backend.open(c.onError, `matrix:${index}:${adapter}:`, storeObserver);
  const ip = new Limiter({ policy: slowBucket(IP_LIMIT) });
  const guard: Partial<LimiterOptions> = c.backend.custom
    ? {
        timeoutMs: 100,
        observer: storeObserver,
        ...(c.onError === undefined ? {} : { onError: c.onError as 'fail-closed' | 'throw' }),
      }
    : {};
  const user = new Limiter({ policy: slowBucket(USER_LIMIT), store: opened.store, ...guard });
  const options: HttpLimitOptions<unknown> = {
    dimensions: [
      { name: 'ip', limiter: ip },
      { name: 'user', limiter: user, key: byHeader('x-user') },
    ],
    logger: { warn: (message) => void logs.push(message) },
    observer: { storeError: (e) => void gateEvents.push(e) },
    ...(c.onStoreError === undefined ? {} : { onStoreError: c.onStoreError }),
  };
  let running: Running | undefined;
  const start = async (): Promise<Running> => (running = await adapters[adapter]!(options));
  const seen = async (): Promise<Seen> => {
    const responses = [];
    for (let i = 0; i < REQUESTS; i++) {
      const res = await fetch(`${running!.url}/ok`, {
        headers: { 'x-user': adapter },
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
      responses.push({ status: res.status, headers: res.headers, body: await res.text() });
    }
    const ipLeft = ip.peekSync('ip/ip:127.0.0.1', { cost: 0 }).remaining;
    const userLeft =
      c.answer === 'ok' ? (await user.peek(`user/header:x-user:${adapter}`, { cost: 0 })).remaining : undefined;
    return { adapter, responses, ipLeft, userLeft, logs, gateEvents, storeEvents };
  };
  return { start, seen, close: () => opened.close() };
}

function problem(body: string): Record<string, unknown> {
  return JSON.parse(body) as Record<string, unknown>;
}

/** Asserts what `answer` requires of what one adapter saw. */
function check(c: Case, s: Seen): void {
  const at = `${s.adapter}: `;
  const statuses = s.responses.map((r) => r.status);
  const degraded = s.responses.map((r) => r.headers.get('floodgate-degraded'));
  const failing = c.answer !== 'ok';
  assert.equal(s.logs.length, failing ? 1 : 0, `${at}one log line per outage, got ${JSON.stringify(s.logs)}`);
  if (c.answer !== 'app-error') assert.ok(!statuses.includes(500), `${at}no 500: ${statuses}`);
  switch (c.answer) {
    case 'ok': {
      assert.deepEqual(statuses, [200, 200, 200, 200, 429], at);
      assert.match(
        s.responses[0]!.headers.get('ratelimit')!,
        new RegExp(`^"ip";r=${IP_LIMIT - 1};t=\\d+, "user";r=${USER_LIMIT - 1};t=\\d+$`),
        at,
      );
      const refused = s.responses[4]!;
      assert.match(refused.headers.get('content-type')!, /^application\/problem\+json/, at);
      assert.ok(Number(refused.headers.get('retry-after')) >= 1, at);
      assert.deepEqual(problem(refused.body)['violated-policies'], ['user'], at);
      assert.equal(s.ipLeft, IP_LIMIT - USER_LIMIT, `${at}the refused request is charged nowhere`);
      assert.equal(s.userLeft, 0, at);
      assert.deepEqual(degraded, [null, null, null, null, null], at);
      break;
    }
    case 'fail-open':
      assert.deepEqual(statuses, [200, 200, 200, 200, 200], at);
      assert.deepEqual(degraded, Array(REQUESTS).fill('fail-open'), at);
      if (c.onError === 'throw') {
        // The error reached the gate: the limiter layer took back every charge, and nothing was decided.
        assert.ok(
          s.responses.every((r) => r.headers.get('ratelimit') === null),
          `${at}no RateLimit claimed`,
        );
        assert.equal(s.ipLeft, IP_LIMIT, `${at}nothing charged`);
      } else {
        s.responses.forEach((r, i) =>
          assert.match(
            r.headers.get('ratelimit')!,
            new RegExp(`^"ip";r=${IP_LIMIT - 1 - i};t=\\d+$`),
            `${at}no item for the undecided policy`,
          ),
        );
        assert.equal(s.ipLeft, IP_LIMIT - REQUESTS, `${at}served requests count where decided`);
      }
      break;
    case 'fail-closed':
      assert.deepEqual(statuses, Array(REQUESTS).fill(503), at);
      assert.deepEqual(degraded, Array(REQUESTS).fill('fail-closed'), at);
      for (const r of s.responses) {
        assert.match(r.headers.get('content-type')!, /^application\/problem\+json/, at);
        assert.ok(Number(r.headers.get('retry-after')) >= 1, `${at}Retry-After: ${r.headers.get('retry-after')}`);
        assert.equal(
          problem(r.body).type,
          'https://iana.org/assignments/http-problem-types#temporary-reduced-capacity',
          at,
        );
        assert.deepEqual(problem(r.body)['violated-policies'], ['user'], at);
      }
      assert.equal(s.ipLeft, IP_LIMIT, `${at}a refused request is charged nowhere`);
      break;
    case 'fallback':
      assert.deepEqual(statuses, [200, 200, 429, 429, 429], `${at}half the limit, decided locally`);
      assert.deepEqual(degraded, Array(REQUESTS).fill('fallback'), at);
      assert.equal(s.ipLeft, IP_LIMIT - 2, at);
      break;
    case 'local-whole':
      assert.deepEqual(statuses, [200, 200, 200, 200, 429], `${at}the whole limit (one process seen), decided locally`);
      assert.deepEqual(degraded, Array(REQUESTS).fill('fallback'), at);
      assert.equal(s.ipLeft, IP_LIMIT - USER_LIMIT, at);
      break;
    case 'app-error':
      assert.deepEqual(statuses, Array(REQUESTS).fill(500), `${at}the application's own error handler answered`);
      assert.ok(
        s.responses.every((r) => r.headers.get('content-type') !== 'application/problem+json'),
        at,
      );
      assert.equal(s.ipLeft, IP_LIMIT, at);
      break;
  }
  checkEvents(c, s);
}

/** Store errors the gate saw go to its observer with the policy it applied; the Redis store reports its own. */
function checkEvents(c: Case, s: Seen): void {
  const at = `${s.adapter}: `;
  const reachesGate = c.answer !== 'ok' && c.onError === 'throw';
  if (!reachesGate) {
    assert.equal(s.gateEvents.length, 0, at);
  } else {
    assert.equal(s.gateEvents.length, REQUESTS, at);
    const policy = c.onStoreError ?? 'fail-open';
    assert.ok(
      s.gateEvents.every((e) => e.policy === policy && e.store === 'http:user'),
      `${at}${JSON.stringify(s.gateEvents.map((e) => e.policy))}`,
    );
  }
  if (c.answer === 'ok') return;
  const storePolicy =
    c.onError === undefined
      ? c.answer === 'local-whole'
        ? 'fallback'
        : 'fail-open'
      : typeof c.onError === 'object'
        ? 'fallback'
        : c.onError;
  assert.ok(s.storeEvents.length >= 1, `${at}the store (or the limiter guarding a custom one) reports its failures`);
  assert.ok(
    s.storeEvents.every((e) => e.policy === storePolicy),
    `${at}${JSON.stringify(s.storeEvents.map((e) => e.policy))}`,
  );
}

describe('failure matrix: five adapters x stores x failure policies', () => {
  cases.forEach((c, index) => {
    const label = `${c.backend.name}, store onError ${JSON.stringify(c.onError ?? 'default')}, gate onStoreError ${c.onStoreError ?? 'default'} -> ${c.answer}`;
    it(label, async () => {
      const names = Object.keys(adapters);
      const runs = await Promise.all(names.map((name) => runAdapter(c, name, index)));
      const servers = await Promise.all(runs.map((r) => r.start()));
      c.backend.breakIt?.();
      let seen: Seen[];
      try {
        seen = await Promise.all(runs.map((r) => r.seen()));
      } finally {
        c.backend.mend?.();
        await Promise.all(runs.map((r) => r.close()));
        await Promise.all(servers.map((s) => s.close()));
      }
      for (const s of seen) check(c, s);
      await new Promise((resolve) => setTimeout(resolve, 10));
      assert.deepEqual(unhandled, [], 'no unhandled rejection');
    });
  });
});
