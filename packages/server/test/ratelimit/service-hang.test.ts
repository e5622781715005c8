/**
 * RemoteStore and RateLimitClient at their default timeout while the real decision service (a
 * `floodgate ratelimit` process, main.ts) hangs (SIGSTOP): every call settles with its `onError`
 * answer, once the circuit is open calls settle without waiting on the service at all, and they are
 * decided by the service again once it resumes (SIGCONT). Behaviour only: no durations asserted.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { FloodgateError, Limiter, fixedWindow } from 'floodgate';
import { RateLimitClient, type ClientDecision } from '../../src/ratelimit/client/client.js';
import { RemoteStore } from '../../src/ratelimit/client/remote-store.js';
import { startServiceProcess, type ServiceProcess } from './processes.js';
import { fixturePath } from './support.js';

const pause = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** settlesAtOnce is true when `promise` settles before any I/O or timer can run: it waited on nothing. */
async function settlesAtOnce(promise: Promise<unknown>): Promise<boolean> {
  const waited = Symbol('waited');
  const raced = await Promise.race([
    promise.then(
      () => true,
      () => true,
    ),
    new Promise<typeof waited>((r) => setImmediate(() => r(waited))),
  ]);
  return raced !== waited;
}

/** untilTrue calls `check` every 20 ms until it holds, at most `attempts` times. */
async function untilTrue(check: () => Promise<boolean>, attempts = 500): Promise<boolean> {
  for (let i = 0; i < attempts; i++) {
    if (await check()) return true;
    await pause(20);
  }
  return false;
}

const ASK = {
  domain: 'rl',
  descriptors: [{ entries: [['foo', 'hang-test']] as Array<[string, string]>, hitsAddend: 0 }],
};

describe('RemoteStore and RateLimitClient while the decision service hangs', () => {
  let service: ServiceProcess;
  before(async () => {
    service = await startServiceProcess(['--config', fixturePath('example.yaml')]);
  });
  after(async () => {
    process.kill(service.pid, 'SIGCONT');
    await service.stop();
  });

  /** hang stops the service for the duration of `during`, and resumes it whatever happens. */
  async function hang<T>(during: () => Promise<T>): Promise<T> {
    process.kill(service.pid, 'SIGSTOP');
    try {
      return await during();
    } finally {
      process.kill(service.pid, 'SIGCONT');
    }
  }

  it('RemoteStore (fail-open): each call answers fail-open, calls stop waiting once the circuit opens, and the service decides again after it resumes', async () => {
    const circuit: string[] = [];
    const store = new RemoteStore({
      url: `http://127.0.0.1:${service.httpPort}`,
      onError: 'fail-open',
      observer: { circuit: (e) => void circuit.push(e.state) },
    });
    const limiter = new Limiter({ policy: fixedWindow({ limit: 1000, windowMs: 3_600_000 }), store });
    try {
      for (let i = 0; i < 5; i++) assert.equal((await limiter.consume('k')).reason, 'ok');
      await hang(async () => {
        const first = await Promise.all(Array.from({ length: 3 }, () => limiter.consume('k')));
        assert.deepEqual(
          first.map((d) => [d.reason, d.allowed]),
          [
            ['fail-open', true],
            ['fail-open', true],
            ['fail-open', true],
          ],
        );
        assert.deepEqual(circuit, ['open']);
        const later = limiter.consume('k');
        assert.ok(await settlesAtOnce(later), 'with the circuit open a call waits on nothing');
        assert.equal((await later).reason, 'fail-open');
      });
      assert.ok(
        await untilTrue(async () => (await limiter.consume('k')).reason === 'ok'),
        'decided by the service again',
      );
      assert.equal(circuit.at(-1), 'closed');
    } finally {
      await store.close();
    }
  });

  it('RemoteStore (throw, the default): calls reject with STORE_TIMEOUT, then at once with STORE_ERROR while the circuit is open', async () => {
    const store = new RemoteStore({ url: `http://127.0.0.1:${service.httpPort}` });
    const limiter = new Limiter({ policy: fixedWindow({ limit: 1000, windowMs: 3_600_000 }), store });
    try {
      assert.equal((await limiter.consume('t')).reason, 'ok');
      await hang(async () => {
        const codes = await Promise.all(
          Array.from({ length: 3 }, () =>
            limiter.consume('t').then(
              () => 'answered',
              (e: FloodgateError) => e.code,
            ),
          ),
        );
        assert.deepEqual(codes, ['STORE_TIMEOUT', 'STORE_TIMEOUT', 'STORE_TIMEOUT']);
        const later = limiter.consume('t');
        assert.ok(await settlesAtOnce(later));
        await assert.rejects(
          later,
          (e: FloodgateError) => e.code === 'STORE_ERROR' && /circuit is open/.test(e.message),
        );
      });
      assert.ok(await untilTrue(async () => (await limiter.consume('t').catch(() => undefined))?.reason === 'ok'));
    } finally {
      await store.close();
    }
  });

  for (const [transport, onError] of [
    ['http', 'fail-open'],
    ['grpc', 'fail-closed'],
  ] as const) {
    it(`RateLimitClient over ${transport} (${onError}): answers ${onError}, stops waiting once the circuit opens, and recovers`, async () => {
      const port = transport === 'http' ? service.httpPort : service.grpcPort;
      const client = new RateLimitClient({ url: `${transport}://127.0.0.1:${port}`, onError });
      try {
        for (let i = 0; i < 5; i++) assert.equal((await client.shouldRateLimit(ASK)).reason, 'ok');
        await hang(async () => {
          const first: ClientDecision[] = [];
          for (let i = 0; i < 3; i++) first.push(await client.shouldRateLimit(ASK));
          assert.deepEqual(
            first.map((d) => [d.reason, d.allowed]),
            Array(3).fill([onError, onError === 'fail-open']),
          );
          const later = client.shouldRateLimit(ASK);
          assert.ok(await settlesAtOnce(later), 'with the circuit open a call waits on nothing');
          assert.equal((await later).reason, onError);
        });
        assert.ok(
          await untilTrue(async () => (await client.shouldRateLimit(ASK)).reason === 'ok'),
          'decided by the service again',
        );
      } finally {
        await client.close();
      }
    });
  }
});
