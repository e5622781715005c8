import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { HttpGate, type HttpLimitOptions, type Logger, type Verdict } from '../../src/http/index.js';
import {
  fixedWindow,
  FloodgateError,
  Limiter,
  ManualClock,
  type Observer,
  type PolicyStore,
  type Store,
  type StoreErrorEvent,
} from '../../src/index.js';
import { FakeView, type FakeRequest } from './support.js';

/** A store that fails every call as a RedisStore on `onError: 'throw'` does: a typed STORE_ERROR. */
function throwingStore(error: () => Error, synchronous = false): Store {
  const fail = synchronous
    ? (): never => {
        throw error();
      }
    : (): Promise<never> => Promise.reject(error());
  const table = { synchronous, consume: fail, peek: fail, refund: fail, reset: fail } as unknown as PolicyStore;
  return { bind: () => table };
}

const storeError = (): Error => new FloodgateError('STORE_ERROR', 'redis: connect ECONNREFUSED 127.0.0.1:1');

interface Recorded {
  logger: Logger & { entries: [string, unknown][] };
  observer: Observer & { events: StoreErrorEvent[] };
}

function recorders(): Recorded {
  const entries: [string, unknown][] = [];
  const events: StoreErrorEvent[] = [];
  return {
    logger: { entries, warn: (message, detail) => void entries.push([message, detail]) },
    observer: { events, storeError: (e) => void events.push(e) },
  };
}

function twoDimensions(
  store: Store,
  onStoreError: HttpLimitOptions['onStoreError'],
  r: Recorded,
): { gate: HttpGate<FakeRequest>; local: Limiter } {
  const clock = new ManualClock(5_000);
  const local = new Limiter({ policy: fixedWindow({ limit: 5, windowMs: 1000 }), clock });
  // onError 'throw' on the limiter: the store's error reaches the gate, as these tests intend.
  const shared = new Limiter({ policy: fixedWindow({ limit: 5, windowMs: 1000 }), clock, store, onError: 'throw' });
  const options: HttpLimitOptions<FakeRequest> = {
    dimensions: [
      { name: 'local', limiter: local },
      { name: 'shared', limiter: shared },
    ],
    logger: r.logger,
    observer: r.observer,
    clock,
    ...(onStoreError === undefined ? {} : { onStoreError }),
  };
  return { gate: new HttpGate<FakeRequest>(options), local };
}

const header = (v: Verdict, name: string): string | undefined => v.headers.find(([n]) => n === name)?.[1];
const localLeft = (l: Limiter): number => l.peekSync('local/ip:127.0.0.1', { cost: 0 }).remaining;

describe('a store error that reaches the gate (STORE_ERROR, as a RedisStore on throw rejects)', () => {
  for (const synchronous of [false, true]) {
    const kind = synchronous ? 'synchronous' : 'asynchronous';

    it(`${kind}: fails open by default: admitted, marked, no RateLimit claimed, logged once, each error observed`, async () => {
      const r = recorders();
      const { gate, local } = twoDimensions(throwingStore(storeError, synchronous), undefined, r);
      for (let i = 0; i < 3; i++) {
        const v = await gate.check(new FakeView(gate.clientIp, {}));
        assert.equal(v.allowed, true);
        assert.equal(header(v, 'floodgate-degraded'), 'fail-open');
        assert.equal(header(v, 'ratelimit'), undefined);
      }
      assert.equal(localLeft(local), 5, 'the limiter layer took back what it charged before the error: nothing counts');
      assert.equal(r.logger.entries.length, 1);
      assert.match(r.logger.entries[0]![0], /the store behind "(local, )?shared" failed; onStoreError "fail-open"/);
      assert.ok(r.logger.entries[0]![1] instanceof FloodgateError);
      assert.equal(r.observer.events.length, 3);
      assert.deepEqual(
        { ...r.observer.events[0]!, error: undefined },
        {
          store: synchronous ? 'http:local, shared' : 'http:shared',
          error: undefined,
          policy: 'fail-open',
          atMs: 5_000,
        },
      );
      assert.equal((r.observer.events[0]!.error as FloodgateError).code, 'STORE_ERROR');
    });

    it(`${kind}: fail-closed answers 503 temporary-reduced-capacity and charges nothing`, async () => {
      const r = recorders();
      const { gate, local } = twoDimensions(throwingStore(storeError, synchronous), 'fail-closed', r);
      const v = await gate.check(new FakeView(gate.clientIp, {}));
      assert.equal(v.statusCode, 503);
      assert.equal(header(v, 'content-type'), 'application/problem+json');
      const body = JSON.parse(v.body!) as Record<string, unknown>;
      assert.equal(body.type, 'https://iana.org/assignments/http-problem-types#temporary-reduced-capacity');
      // Several synchronous stores fail inside one step, which does not say whose store it was.
      assert.deepEqual(body['violated-policies'], synchronous ? ['local', 'shared'] : ['shared']);
      await new Promise((resolve) => setImmediate(resolve));
      assert.equal(localLeft(local), 5);
      assert.equal(r.observer.events[0]!.policy, 'fail-closed');
    });

    it(`${kind}: throw hands the error on, charging nothing`, async () => {
      const r = recorders();
      const { gate, local } = twoDimensions(throwingStore(storeError, synchronous), 'throw', r);
      await assert.rejects(
        async () => gate.check(new FakeView(gate.clientIp, {})),
        (e: unknown) => e instanceof FloodgateError && e.code === 'STORE_ERROR',
      );
      await new Promise((resolve) => setImmediate(resolve));
      assert.equal(localLeft(local), 5);
      assert.equal(r.observer.events[0]!.policy, 'throw');
      assert.equal(r.logger.entries.length, 1);
    });
  }

  it('a plain Error from a custom store is a store failure too', async () => {
    const r = recorders();
    const { gate } = twoDimensions(
      throwingStore(() => new Error('socket hang up')),
      'fail-closed',
      r,
    );
    assert.equal((await gate.check(new FakeView(gate.clientIp, {}))).statusCode, 503);
  });

  it('logs a new outage after the store has decided again', async () => {
    const r = recorders();
    let failing = true;
    const inner = new Limiter({ policy: fixedWindow({ limit: 100, windowMs: 1000 }), clock: new ManualClock() }).table;
    const table: PolicyStore = {
      synchronous: false,
      consume: (k, c, n) => (failing ? Promise.reject(storeError()) : Promise.resolve(inner.consume(k, c, n))),
      peek: (k, c, n) => Promise.resolve(inner.peek(k, c, n)),
      refund: async () => {},
      reset: async () => {},
    };
    const limiter = new Limiter({
      policy: fixedWindow({ limit: 100, windowMs: 1000 }),
      clock: new ManualClock(),
      store: { bind: () => table },
      onError: 'throw',
    });
    const gate = new HttpGate<FakeRequest>({ limiter, logger: r.logger });
    const once = async (): Promise<Verdict> => gate.check(new FakeView(gate.clientIp, {}));
    await once();
    await once();
    failing = false;
    assert.equal(header(await once(), 'floodgate-degraded'), undefined);
    failing = true;
    await once();
    assert.equal(r.logger.entries.length, 2, 'one line per outage');
  });
});
