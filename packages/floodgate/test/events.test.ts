import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  Limiter,
  ManualClock,
  consumeAll,
  consumeAllSync,
  fixedWindow,
  tokenBucket,
  type DecisionEvent,
  type Observer,
  type QueueEvent,
} from '../src/index.js';

function recorder(): Observer & { decisions: DecisionEvent[]; queues: QueueEvent[] } {
  const decisions: DecisionEvent[] = [];
  const queues: QueueEvent[] = [];
  return { decisions, queues, decision: (e) => void decisions.push(e), queue: (e) => void queues.push(e) };
}

describe('decision events', () => {
  test('every form reports: limiter name, operation, cost, the decision, the time; keys only when asked', async () => {
    const clock = new ManualClock(500);
    const observer = recorder();
    const limiter = new Limiter({
      policy: tokenBucket({ capacity: 2, refillPerSecond: 1 }),
      clock,
      observer,
      name: 'api',
    });
    const d1 = limiter.consumeSync('alice');
    const d2 = await limiter.consume('alice', { cost: 1 });
    const d3 = limiter.peekSync('alice');
    clock.advance(10);
    const d4 = await limiter.peek('alice', { cost: 0 });
    assert.deepEqual(observer.decisions, [
      { limiter: 'api', key: undefined, cost: 1, operation: 'consume', decision: d1, atMs: 500 },
      { limiter: 'api', key: undefined, cost: 1, operation: 'consume', decision: d2, atMs: 500 },
      { limiter: 'api', key: undefined, cost: 1, operation: 'peek', decision: d3, atMs: 500 },
      { limiter: 'api', key: undefined, cost: 0, operation: 'peek', decision: d4, atMs: 510 },
    ]);
    assert.equal(d3.allowed, false);
    const keyed = recorder();
    const named = new Limiter({
      policy: fixedWindow({ limit: 1, windowMs: 1000 }),
      clock,
      observer: keyed,
      reportKeys: true,
    });
    named.consumeSync('bob');
    assert.equal(keyed.decisions[0]!.key, 'bob');
    assert.equal(keyed.decisions[0]!.limiter, 'fixed-window', "the name defaults to the policy's");
  });

  test('an observer that throws changes nothing; one without a decision hook costs nothing and sees nothing', () => {
    const clock = new ManualClock(0);
    const throwing = new Limiter({
      policy: fixedWindow({ limit: 1, windowMs: 1000 }),
      clock,
      observer: {
        decision: () => {
          throw new Error('observer bug');
        },
      },
    });
    assert.equal(throwing.consumeSync('k').allowed, true);
    assert.equal(throwing.consumeSync('k').allowed, false);
    const quiet = new Limiter({ policy: fixedWindow({ limit: 1, windowMs: 1000 }), clock, observer: {} });
    assert.equal(quiet.hasDecisionObserver, false);
    assert.equal(quiet.consumeSync('k').allowed, true);
  });

  test('a decision over several limits reports one event per limit: charges as consume, trials of a refused request as peek', async () => {
    const clock = new ManualClock(0);
    const observer = recorder();
    const ip = new Limiter({ policy: fixedWindow({ limit: 5, windowMs: 1000 }), clock, observer, name: 'ip' });
    const user = new Limiter({ policy: fixedWindow({ limit: 1, windowMs: 1000 }), clock, observer, name: 'user' });
    consumeAllSync([
      { limiter: ip, key: 'i' },
      { limiter: user, key: 'u' },
    ]);
    await consumeAll([
      { limiter: ip, key: 'i' },
      { limiter: user, key: 'u' },
    ]);
    assert.deepEqual(
      observer.decisions.map((e) => [e.limiter, e.operation, e.decision.allowed]),
      [
        ['ip', 'consume', true],
        ['user', 'consume', true],
        ['ip', 'peek', true],
        ['user', 'consume', false],
      ],
    );
  });
});

describe('queue events', () => {
  test("acquire reports each line's depth as callers join and leave", async () => {
    const clock = new ManualClock(0);
    const observer = recorder();
    const limiter = new Limiter({
      policy: fixedWindow({ limit: 1, windowMs: 1000 }),
      clock,
      observer,
      name: 'jobs',
      reportKeys: true,
    });
    await limiter.acquire('k');
    const waiting = [limiter.acquire('k'), limiter.acquire('k')];
    assert.deepEqual(
      observer.queues.map((e) => [e.queue, e.key, e.depth]),
      [
        ['jobs', 'k', 1],
        ['jobs', 'k', 2],
      ],
    );
    clock.advance(1000);
    await waiting[0];
    clock.advance(1000);
    await waiting[1];
    assert.deepEqual(
      observer.queues.map((e) => e.depth),
      [1, 2, 1, 0],
    );
    assert.deepEqual(
      observer.queues.map((e) => e.atMs),
      [0, 0, 1000, 2000],
    );
  });
});
