import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ManualClock, fixedWindow, tokenBucket, type Decision } from '../../src/index.js';
import { RedisStore, ioredisAdapter, type RedisAdapter } from '../../src/stores/redis/index.js';

// A sick Redis never holds a caller longer than the current timeout, and what the failure policy
// admits meanwhile is charged to Redis once it answers: against an adapter that hangs, fails or
// answers on demand, on a manual clock.

type Mode = 'ok' | 'hang' | 'fail';

interface Sent {
  readonly op: string;
  readonly key: string;
  readonly cost: string;
  /** answer settles a call that was left hanging, with `reply`. */
  readonly answer: (reply: unknown) => void;
}

/** scripted returns an adapter answering as `mode` says (a consume is admitted, a charge takes its cost), recording what was sent. */
function scripted(): { adapter: RedisAdapter; sent: Sent[]; set: (mode: Mode) => void } {
  let mode: Mode = 'ok';
  const sent: Sent[] = [];
  const call = (_script: string, keys: readonly string[], args: readonly string[]): Promise<unknown> => {
    let answer: (reply: unknown) => void = () => {};
    const promise = new Promise<unknown>((resolve, reject) => {
      answer = resolve;
      if (mode === 'fail') reject(new Error('Connection is closed.'));
      else if (mode === 'ok') resolve(args[1] === 'charge' ? args[3] : ['1', '0', '0', '0']);
    });
    sent.push({ op: args[1]!, key: keys[0]!, cost: args[3]!, answer });
    return promise;
  };
  return { adapter: { cluster: false, evalsha: call, eval: call }, sent, set: (m) => (mode = m) };
}

const policy = fixedWindow({ limit: 100, windowMs: 60_000 });

/** A macrotask later: every reaction of promises already settled has run. */
function drained(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** settledNow returns whether `promise` settled by the next macrotask, without moving the clock. */
async function settledNow(promise: Promise<unknown>): Promise<boolean> {
  let settled = false;
  promise.then(
    () => (settled = true),
    () => (settled = true),
  );
  await drained();
  return settled;
}

describe('the default timeout: a hung Redis costs a caller the floor, once', () => {
  test('after fast answers the timeout is the 25 ms floor; once the circuit opens nobody waits', async () => {
    const { adapter, set } = scripted();
    const clock = new ManualClock();
    const table = new RedisStore({ adapter, maxBatchSize: 1, clock, timers: clock }).bind(policy);
    for (let i = 0; i < 40; i++) assert.equal((await table.consume(`k${i}`, 1, NaN)).reason, 'ok');
    set('hang');
    const hung = Array.from({ length: 5 }, (_, i) => table.consume(`h${i}`, 1, NaN));
    clock.advance(24);
    assert.equal(await settledNow(Promise.race(hung)), false, 'still within the 25 ms floor');
    clock.advance(1);
    const decided = await Promise.all(hung);
    assert.deepEqual(
      decided.map((d) => d.reason),
      Array(5).fill('fallback'),
      'cut off at 25 ms, decided locally',
    );
    const after = table.consume('later', 1, NaN);
    assert.equal(await settledNow(after), true, 'the circuit is open: answered without waiting at all');
    assert.equal((await after).reason, 'fallback');
  });

  test('the circuit opening abandons the calls still in flight on it', async () => {
    const { adapter, set } = scripted();
    const clock = new ManualClock();
    const table = new RedisStore({
      adapter,
      maxBatchSize: 1,
      timeoutMs: 100,
      failuresToOpen: 3,
      clock,
      timers: clock,
    }).bind(policy);
    set('hang');
    const first = [0, 1, 2].map((i) => table.consume(`a${i}`, 1, NaN));
    clock.advance(50);
    const second = [0, 1, 2, 3].map((i) => table.consume(`b${i}`, 1, NaN));
    clock.advance(50); // the first three time out: the circuit opens
    await Promise.all(first);
    assert.equal(
      await settledNow(Promise.all(second)),
      true,
      'cut off at the opening, 50 ms before their own deadline',
    );
    assert.deepEqual(
      (await Promise.all(second)).map((d) => d.reason),
      Array(4).fill('fallback'),
    );
  });
});

describe('write-back: what the failure policy admitted is charged to Redis when it answers again', () => {
  test("each key's total goes as one charge, after the first answer", async () => {
    const { adapter, sent, set } = scripted();
    const clock = new ManualClock();
    const table = new RedisStore({ adapter, maxBatchSize: 1, timeoutMs: 50, clock, timers: clock }).bind(policy);
    set('fail');
    const during: Decision[] = [];
    for (let i = 0; i < 3; i++) during.push(await table.consume('a', 1, NaN));
    for (let i = 0; i < 2; i++) during.push(await table.consume('b', 2, NaN));
    during.push(await table.peek('c', 1, NaN));
    assert.ok(during.every((d) => d.allowed && d.reason === 'fallback'));
    assert.equal(table.writeBack?.owedFor('a'), 3);
    assert.equal(table.writeBack?.owedFor('b'), 4);
    assert.equal(table.writeBack?.owedFor('c'), 0, 'a peek charges nothing');
    set('ok');
    clock.advance(250); // the probe is due
    assert.equal((await table.consume('d', 1, NaN)).reason, 'ok');
    await drained();
    const charges = sent.filter((s) => s.op === 'charge').map((s) => [s.key.replace(/^.*\{|\}$/g, ''), s.cost]);
    assert.deepEqual(charges, [
      ['a', '3'],
      ['b', '4'],
    ]);
    assert.equal(table.writeBack?.size, 0);
  });

  test('a call cut off at its deadline that ran on Redis after all is not charged twice', async () => {
    const { adapter, sent, set } = scripted();
    const clock = new ManualClock();
    const table = new RedisStore({ adapter, maxBatchSize: 1, timeoutMs: 50, clock, timers: clock }).bind(policy);
    set('hang');
    const cut = [table.consume('a', 1, NaN), table.consume('a', 1, NaN)];
    clock.advance(50);
    assert.deepEqual(
      (await Promise.all(cut)).map((d) => d.reason),
      ['fallback', 'fallback'],
    );
    assert.equal(table.writeBack?.owedFor('a'), 2);
    set('ok'); // Redis is back: the late answers come first
    sent[0]!.answer(['1', '97', '0', '0']); // Redis ran the first one late, and admitted it
    sent[1]!.answer(['0', '0', '1000', '1000']); // and refused the second: it is still owed
    await drained();
    // Once no cut-off call is still out, the write-back goes: only what Redis did not count.
    assert.deepEqual(
      sent.filter((s) => s.op === 'charge').map((s) => s.cost),
      ['1'],
    );
    assert.equal(table.writeBack?.size, 0);
  });

  test('a charge that fails stays owed for the next answer', async () => {
    const { adapter, sent, set } = scripted();
    const clock = new ManualClock();
    const table = new RedisStore({
      adapter,
      maxBatchSize: 1,
      timeoutMs: 50,
      failuresToOpen: 100,
      clock,
      timers: clock,
    }).bind(policy);
    set('fail');
    await table.consume('a', 1, NaN);
    set('ok');
    const answered = table.consume('b', 1, NaN);
    set('fail'); // the charge, sent once 'b' is answered, fails
    assert.equal((await answered).reason, 'ok');
    await drained();
    assert.equal(table.writeBack?.owedFor('a'), 1);
    set('ok');
    await table.consume('c', 1, NaN);
    await drained();
    assert.equal(table.writeBack?.size, 0);
    assert.deepEqual(
      sent.filter((s) => s.op === 'charge').map((s) => s.cost),
      ['1', '1'],
    );
  });

  test('writeBack: false, fail-closed and throw owe nothing', async () => {
    const { adapter, set } = scripted();
    set('fail');
    const clock = new ManualClock();
    const off = new RedisStore({ adapter, maxBatchSize: 1, writeBack: false, clock, timers: clock });
    assert.equal(off.bind(policy).writeBack, undefined);
    assert.equal(
      (off.withOnError('fail-open').bind(policy) as ReturnType<RedisStore['bind']>).writeBack,
      undefined,
      'writeBack: false holds for every policy of the store',
    );
    const on = new RedisStore({ adapter, maxBatchSize: 1, clock, timers: clock });
    assert.equal((on.withOnError('fail-closed').bind(policy) as ReturnType<RedisStore['bind']>).writeBack, undefined);
    assert.equal((on.withOnError('throw').bind(policy) as ReturnType<RedisStore['bind']>).writeBack, undefined);
    assert.notEqual((on.withOnError('fail-open').bind(policy) as ReturnType<RedisStore['bind']>).writeBack, undefined);
  });
});

describe("the local fallback's share", () => {
  test('share or nodes, not both; nodes a whole number', () => {
    const { adapter } = scripted();
    assert.throws(
      () => new RedisStore({ adapter, onError: { fallback: 'local', share: 0.5, nodes: 2 } }),
      /give share or nodes, not both/,
    );
    assert.throws(
      () => new RedisStore({ adapter, onError: { fallback: 'local', nodes: 1.5 } }),
      /nodes \(a whole number >= 1\)/,
    );
  });

  test('nodes: 4 gives each process a quarter of the limit', async () => {
    const { adapter, set } = scripted();
    const clock = new ManualClock();
    const table = new RedisStore({
      adapter,
      maxBatchSize: 1,
      onError: { fallback: 'local', nodes: 4 },
      clock,
      timers: clock,
    }).bind(policy);
    set('fail');
    let admitted = 0;
    for (let i = 0; i < 60; i++) if ((await table.consume('a', 1, NaN)).allowed) admitted++;
    assert.equal(admitted, 25);
  });
});

describe('ioredisAdapter fails a call at once while the connection is lost', () => {
  test('reconnecting, close or end: rejected without reaching the client; connecting or ready: sent', async () => {
    let sent = 0;
    const client = {
      status: 'ready',
      evalsha: () => (sent++, Promise.resolve(['1', '0', '0', '0'])),
      eval: () => (sent++, Promise.resolve(['1', '0', '0', '0'])),
    };
    const adapter = ioredisAdapter(client);
    for (const status of ['reconnecting', 'close', 'end']) {
      client.status = status;
      await assert.rejects(
        adapter.evalsha('sha', ['k'], []),
        new RegExp(`Connection is closed \\(ioredis status: ${status}\\)`),
      );
      await assert.rejects(adapter.eval('return 1', ['k'], []), /Connection is closed/);
    }
    assert.equal(sent, 0, 'nothing was queued in the client');
    for (const status of ['connecting', 'ready']) {
      client.status = status;
      await adapter.evalsha('sha', ['k'], []);
    }
    assert.equal(sent, 2);
  });
});

describe('lapses in a row', () => {
  test('the local limiter goes on from what the last lapse spent instead of starting full', async () => {
    const { adapter, set } = scripted();
    const clock = new ManualClock();
    const bucket = tokenBucket({ capacity: 10, refillPerSecond: 1 });
    const table = new RedisStore({
      adapter,
      maxBatchSize: 1,
      timeoutMs: 50,
      writeBack: false,
      clock,
      timers: clock,
    }).bind(bucket);
    const lapse = async (): Promise<number> => {
      set('fail');
      let admitted = 0;
      for (let i = 0; i < 20; i++) if ((await table.consume('a', 1, NaN)).allowed) admitted++;
      set('ok');
      clock.advance(250); // the probe is due
      assert.equal((await table.consume('b', 1, NaN)).reason, 'ok');
      return admitted;
    };
    assert.equal(await lapse(), 10, 'the first lapse starts from a full bucket (one process: the whole limit)');
    clock.advance(2000);
    assert.equal(await lapse(), 2, 'the next, 2.25 s later, has what refilled meanwhile, not a full bucket');
  });
});
