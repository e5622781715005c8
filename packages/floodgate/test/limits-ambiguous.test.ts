import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  FloodgateError,
  Limiter,
  ManualClock,
  MemoryStore,
  consumeAll,
  fixedWindow,
  type Algorithm,
  type Decision,
  type PolicyStore,
  type Store,
} from '../src/index.js';

/**
 * A store whose multi-limit call reaches the backend, charges, and then loses its reply (as a Redis
 * script that ran while the client's deadline passed): the limiter layer must not charge again.
 */
class LostReplyStore implements Store {
  readonly memory = new MemoryStore();
  consumeAllCalls = 0;
  constructor(
    private readonly failure: 'STORE_TIMEOUT' | 'STORE_REPLY' | 'STORE_ERROR',
    private readonly clock: ManualClock,
  ) {}

  bind(algorithm: Algorithm): PolicyStore {
    const table = this.memory.bind(algorithm);
    return {
      synchronous: false,
      consume: async (key, cost, nowMs) => table.consume(key, cost, nowMs),
      peek: async (key, cost, nowMs) => table.peek(key, cost, nowMs),
      refund: async (key, cost, nowMs) => table.refund(key, cost, nowMs),
      reset: async (key) => table.reset(key),
    };
  }

  async consumeAll(
    requests: readonly { policy: Algorithm; key: string; cost?: number }[],
  ): Promise<{ allowed: boolean; decisions: Decision[] }> {
    this.consumeAllCalls++;
    if (this.failure !== 'STORE_ERROR') {
      // The backend ran the step: every limit admitted and was charged. Then the reply was lost.
      for (const r of requests) this.memory.bind(r.policy).consume(r.key, r.cost ?? 1, this.clock.now());
    }
    throw new FloodgateError(this.failure, `the reply was lost (${this.failure})`);
  }
}

function remaining(store: LostReplyStore, policy: Algorithm, key: string, clock: ManualClock): number {
  return store.memory.bind(policy).peek(key, 0, clock.now()).remaining;
}

describe('consumeAll when the store call fails after it may have run', () => {
  for (const failure of ['STORE_TIMEOUT', 'STORE_REPLY'] as const) {
    test(`${failure}: each limit is only looked at, so the request is counted once`, async () => {
      const clock = new ManualClock();
      const store = new LostReplyStore(failure, clock);
      const perIp = new Limiter({ policy: fixedWindow({ limit: 10, windowMs: 60_000 }), store, clock });
      const perUser = new Limiter({ policy: fixedWindow({ limit: 5, windowMs: 60_000 }), store, clock });
      const result = await consumeAll([
        { limiter: perIp, key: 'ip' },
        { limiter: perUser, key: 'u' },
      ]);
      assert.equal(store.consumeAllCalls, 1);
      assert.equal(result.allowed, true);
      assert.equal(remaining(store, perIp.policy, 'ip', clock), 9, 'charged once by the call that ran, never again');
      assert.equal(remaining(store, perUser.policy, 'u', clock), 4);
    });
  }

  test('STORE_ERROR (the call never ran): the limits are decided again, each charged once', async () => {
    const clock = new ManualClock();
    const store = new LostReplyStore('STORE_ERROR', clock);
    const perIp = new Limiter({ policy: fixedWindow({ limit: 10, windowMs: 60_000 }), store, clock });
    const perUser = new Limiter({ policy: fixedWindow({ limit: 5, windowMs: 60_000 }), store, clock });
    const result = await consumeAll([
      { limiter: perIp, key: 'ip' },
      { limiter: perUser, key: 'u' },
    ]);
    assert.equal(result.allowed, true);
    assert.equal(remaining(store, perIp.policy, 'ip', clock), 9);
    assert.equal(remaining(store, perUser.policy, 'u', clock), 4);
  });
});
