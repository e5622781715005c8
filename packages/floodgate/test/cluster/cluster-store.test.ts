import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  FloodgateError,
  Limiter,
  ManualClock,
  fixedWindow,
  gcra,
  leaseOverAdmission,
  slidingWindowLog,
  tokenBucket,
  type Algorithm,
} from '../../src/index.js';
import { ClusterStore, ClusterStoreHost } from '../../src/cluster.js';
import { seeded } from '../waiting/support.js';
import { channelPair } from './pair.js';

/** A host and `n` worker stores on one manual clock, each worker joined to the host by its own channel. */
function fleet(n: number, options: { maxOutstandingShare?: number } = {}) {
  const clock = new ManualClock(1_000_000);
  const host = new ClusterStoreHost({ clock });
  const stores = Array.from({ length: n }, () => {
    const [worker, primary] = channelPair();
    host.attach(primary);
    return new ClusterStore({ channel: worker, clock, timers: clock, timeoutMs: 1_000, ...options });
  });
  return { clock, host, stores };
}

/** Lets every message in flight arrive and be answered. */
async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
}

/**
 * Runs `rounds` rounds in which each worker sends a random number of requests at once (all in flight
 * together, as a busy worker's would be) on `key`, with the clock moving `stepMs` between rounds;
 * returns the admitted count per round.
 */
async function drive(
  policy: Algorithm,
  stores: readonly ClusterStore[],
  clock: ManualClock,
  o: { seed: number; rounds: number; stepMs: number; key?: string },
): Promise<number[]> {
  const rand = seeded(o.seed);
  const limiters = stores.map((store) => new Limiter({ policy, store, clock, timers: clock }));
  const perRound: number[] = [];
  for (let r = 0; r < o.rounds; r++) {
    const calls = limiters.flatMap((l) =>
      Array.from({ length: Math.floor(rand() * 40) }, () => l.consume(o.key ?? 'k')),
    );
    const decisions = await Promise.all(calls);
    perRound.push(decisions.filter((d) => d.allowed).length);
    await settle();
    clock.advance(o.stepMs);
    await settle();
  }
  return perRound;
}

describe('ClusterStore: one limit for several workers', () => {
  test('a fixed window of 100, 2 workers, 400 requests: exactly 100 admitted', async () => {
    const { clock, stores } = fleet(2);
    const policy = fixedWindow({ limit: 100, windowMs: 60_000 });
    const limiters = stores.map((store) => new Limiter({ policy, store, clock, timers: clock }));
    const decisions = await Promise.all(Array.from({ length: 400 }, (_, i) => limiters[i % 2]!.consume('ip:1')));
    assert.equal(decisions.filter((d) => d.allowed).length, 100);
    for (const s of stores) await s.close();
  });

  test('fixed windows stay exact over many windows and interleavings (seed sweep)', async () => {
    const policy = fixedWindow({ limit: 50, windowMs: 1_000 });
    for (let seed = 1; seed <= 60; seed++) {
      const { clock, stores } = fleet(3);
      // 250 ms steps: four rounds a window, each window's rounds summed.
      const rounds = await drive(policy, stores, clock, { seed, rounds: 40, stepMs: 250 });
      for (let w = 0; w < rounds.length; w += 4) {
        const inWindow = rounds.slice(w, w + 4).reduce((a, b) => a + b, 0);
        assert.ok(inWindow <= 50, `seed ${seed}, window ${w / 4}: ${inWindow} admitted of 50`);
      }
      for (const s of stores) await s.close();
    }
  });

  test('a token bucket admits at most its limit plus the stated bound, over any run (seed sweep)', async () => {
    const policy = tokenBucket({ capacity: 1_000, refillPerSecond: 100 });
    const bound = leaseOverAdmission(policy, { maxOutstandingShare: 0.01 });
    assert.equal(bound, 10);
    for (let seed = 1; seed <= 60; seed++) {
      const { clock, stores } = fleet(2);
      const start = clock.now();
      const rounds = await drive(policy, stores, clock, { seed, rounds: 30, stepMs: 100 });
      const admitted = rounds.reduce((a, b) => a + b, 0);
      const allowed = 1_000 + ((clock.now() - start) / 1000) * 100;
      assert.ok(
        admitted <= allowed + bound,
        `seed ${seed}: ${admitted} admitted, the bucket allows ${allowed} + ${bound}`,
      );
      for (const s of stores) await s.close();
    }
  });

  test('most decisions send no message: a worker refuses locally once its share is used', async () => {
    const { clock, stores } = fleet(2);
    const policy = fixedWindow({ limit: 100, windowMs: 60_000 });
    const limiters = stores.map((store) => new Limiter({ policy, store, clock, timers: clock }));
    let admitted = 0;
    for (let i = 0; i < 4_000; i++) if ((await limiters[i % 2]!.consume('hot')).allowed) admitted++;
    const sent = stores.reduce((a, s) => a + s.counts.sent, 0);
    assert.equal(admitted, 100);
    assert.ok(sent < 400, `${sent} messages for 4,000 decisions`);
    for (const s of stores) await s.close();
  });

  test('a policy whose share is under one unit, and a sliding window, are decided per request: exact', async () => {
    for (const policy of [
      tokenBucket({ capacity: 50, refillPerSecond: 1e-6 }),
      slidingWindowLog({ limit: 30, windowMs: 60_000 }),
    ]) {
      const { clock, stores, host } = fleet(2);
      const limiters = stores.map((store) => new Limiter({ policy, store, clock, timers: clock }));
      const decisions = await Promise.all(Array.from({ length: 200 }, (_, i) => limiters[i % 2]!.consume('k')));
      assert.equal(decisions.filter((d) => d.allowed).length, policy.limit, policy.name);
      assert.equal(host.calls, 200, `${policy.name}: one message a decision`);
      for (const s of stores) await s.close();
    }
  });

  test('close gives leased units back: what was not spent is there for the others', async () => {
    const { clock, stores } = fleet(2);
    const policy = gcra({ rate: 1_000, periodMs: 1_000, maxBurst: 1_000 });
    const [a, b] = stores.map((store) => new Limiter({ policy, store, clock, timers: clock }));
    let admitted = 0;
    for (let i = 0; i < 300; i++) if ((await a!.consume('g')).allowed) admitted++;
    await stores[0]!.close();
    const left = (await b!.peek('g')).remaining;
    assert.equal(admitted, 300);
    assert.ok(Math.abs(left - 700) <= 1, `left ${left}: 700 expected once the units held came back`);
    await stores[1]!.close();
  });

  test('a reset made by one worker reaches the shared state and every worker', async () => {
    const { clock, stores } = fleet(2);
    const policy = fixedWindow({ limit: 3, windowMs: 60_000 });
    const [a, b] = stores.map((store) => new Limiter({ policy, store, clock, timers: clock }));
    for (let i = 0; i < 3; i++) assert.equal((await a!.consume('r')).allowed, true);
    assert.equal((await b!.consume('r')).allowed, false);
    // b now refuses `r` locally until the window ends; a reset made by a reaches it through the host.
    assert.equal((await b!.consume('r')).allowed, false);
    await a!.reset('r');
    await settle();
    assert.equal((await b!.consume('r')).allowed, true);
    for (const s of stores) await s.close();
  });

  test('a refund made by one worker wakes the others that refuse the key locally', async () => {
    const { clock, stores } = fleet(3);
    const policy = fixedWindow({ limit: 3, windowMs: 60_000 });
    const [a, b, c] = stores.map((store) => new Limiter({ policy, store, clock, timers: clock }));
    for (let i = 0; i < 3; i++) assert.equal((await a!.consume('r')).allowed, true);
    assert.equal((await b!.consume('r')).allowed, false);
    assert.equal((await b!.consume('r')).allowed, false, 'refused locally now');
    // c holds no lease of `r`: its refund goes to the host, which tells every worker.
    await c!.refund('r', 1);
    await settle();
    assert.equal((await b!.consume('r')).allowed, true);
    for (const s of stores) await s.close();
  });

  test('a host that does not answer: onError decides, within timeoutMs, and nothing is left waiting', async () => {
    const clock = new ManualClock(0);
    const [worker] = channelPair(); // nobody attached at the other end
    const store = new ClusterStore({ channel: worker, clock, timers: clock, timeoutMs: 100, onError: 'fail-closed' });
    const limiter = new Limiter({ policy: fixedWindow({ limit: 5, windowMs: 1_000 }), store, clock, timers: clock });
    let answered = false;
    const pending = limiter.consume('x').finally(() => (answered = true));
    // The ask is cut off at 100 ms, then the per-request call it falls back to: two deadlines at most.
    for (let i = 0; i < 2 && !answered; i++) {
      await settle();
      clock.advance(100);
    }
    await settle();
    assert.equal(answered, true, 'answered within two timeouts');
    const d = await pending;
    assert.equal(d.allowed, false);
    assert.equal(d.reason, 'fail-closed');
    // Closing gives back what it holds, which waits for the host at most one more timeout.
    const closing = store.close();
    await settle();
    clock.advance(100);
    await closing;
  });

  test('bad input gets a typed error: a policy of the app own, a bad option, a malformed reply', async () => {
    const host = new ClusterStoreHost();
    const reply = host.answer({
      m: 'floodgate-cluster/1',
      id: 1,
      op: 'consume',
      policy: 'mine/1/x=1',
      key: 'k',
      args: [1],
    });
    assert.equal(reply.error?.code, 'INVALID_OPTION');
    const bad = host.answer({
      m: 'floodgate-cluster/1',
      id: 2,
      op: 'consume',
      policy: 'fixed-window/2/limit=5/windowMs=1000',
      key: '',
      args: [1],
    });
    assert.equal(bad.error?.code, 'INVALID_KEY');
    assert.throws(() => new ClusterStore({ channel: channelPair()[0], timeoutMs: -1 }), FloodgateError);
    assert.throws(() => new ClusterStore({ channel: channelPair()[0], maxOutstandingShare: 2 }), FloodgateError);
    // A reply that is not a decision is a STORE_REPLY error: with onError 'throw' it reaches the caller.
    const [worker, primary] = channelPair();
    primary.onMessage((m) =>
      primary.send({ m: 'floodgate-cluster/1', id: (m as { id: number }).id, value: 'nonsense' }),
    );
    const store = new ClusterStore({ channel: worker, onError: 'throw', maxOutstandingShare: 0.001 });
    const limiter = new Limiter({ policy: tokenBucket({ capacity: 10, refillPerSecond: 1 }), store });
    await assert.rejects(limiter.consume('k'), (e: unknown) => e instanceof FloodgateError && e.code === 'STORE_REPLY');
    await store.close();
  });

  test('the host forgets keys at rest with no lease out', async () => {
    const { clock, host, stores } = fleet(1);
    const limiter = new Limiter({
      policy: fixedWindow({ limit: 10, windowMs: 1_000 }),
      store: stores[0]!,
      clock,
      timers: clock,
    });
    for (let i = 0; i < 50; i++) await limiter.consume(`k${i}`);
    assert.equal(host.keys, 50);
    // No timer: the first call once sweepMs (10 s) has passed forgets what is at rest.
    clock.advance(5_000);
    await limiter.consume('late');
    assert.equal(host.keys, 51, 'not yet: 10 s have not passed since the last sweep');
    clock.advance(5_000);
    await limiter.consume('later');
    assert.equal(host.keys, 1, 'only the key just used');
    await stores[0]!.close();
    assert.equal(clock.timerCount(), 0, 'the host holds no timer');
  });

  test('a host at maxKeys refuses new keys (store-full), counts them, and takes new keys once old ones rest', async () => {
    const clock = new ManualClock(1_000_000);
    const host = new ClusterStoreHost({ clock, maxKeys: 5 });
    const [worker, primary] = channelPair();
    host.attach(primary);
    const store = new ClusterStore({ channel: worker, clock, timers: clock });
    const exact = new Limiter({ policy: slidingWindowLog({ limit: 3, windowMs: 1_000 }), store, clock, timers: clock });
    const leased = new Limiter({ policy: fixedWindow({ limit: 300, windowMs: 1_000 }), store, clock, timers: clock });
    for (let i = 0; i < 5; i++) assert.equal((await exact.consume(`k${i}`)).allowed, true);
    const refused = await exact.consume('k5');
    assert.equal(refused.allowed, false);
    assert.equal(refused.reason, 'store-full');
    assert.equal((await leased.consume('other')).allowed, false, 'a lease ask for a new key too');
    assert.equal((await exact.consume('k0')).allowed, true, 'a key it holds is decided as ever');
    assert.equal(host.full, 2);
    assert.equal(host.keys, 5);
    clock.advance(1_001);
    assert.equal((await exact.consume('k5')).allowed, true, 'room again once the old keys rest');
    await store.close();
  });
});
