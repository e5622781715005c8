/**
 * The concurrency middleware of each framework on a real loopback server, driven by fetch: what a
 * shed request gets, that every permit is released exactly once however the request ends (a
 * finished response, a throwing handler, a client that leaves mid-response or while waiting), the
 * order tiers are served in, and the outcome each ending tells the limiter.
 */
import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import type { HttpConcurrencyOptions } from '../../src/http/index.js';
import type { CallOutcome } from '../../src/index.js';
import { Control, RecordingLimiter, overloadAdapters, until } from './overload-servers.js';
import type { Running } from './servers.js';

/** What each adapter sees of a thrown error: node and Express only the status their error handler sends. */
const SEES_THROWN: Record<string, boolean> = { node: false, express: false, fastify: true, koa: true, hono: true };

for (const [name, start] of Object.entries(overloadAdapters)) {
  describe(`${name} concurrency middleware on a real server`, () => {
    let app: Running | undefined;
    let control: Control;
    const run = async (options: HttpConcurrencyOptions<unknown>): Promise<string> => {
      control = new Control();
      app = await start(options, control);
      return app.url;
    };
    afterEach(async () => {
      control.release();
      await app?.close();
      app = undefined;
    });

    /** Every permit released once, with no error: as many outcomes as admissions, nothing thrown. */
    const releasedOnce = async (limiter: RecordingLimiter, admitted: number): Promise<void> => {
      await until(() => limiter.inFlight === 0, 'no request is in flight');
      assert.equal(limiter.outcomes.length, admitted, `outcomes ${limiter.outcomes.join(', ')}`);
      assert.deepEqual(limiter.releaseErrors, []);
    };

    it('sheds the third of three slow requests under a limit of 2: 503, Retry-After, problem+json, its handler never run', async () => {
      const limiter = new RecordingLimiter({ limit: 2 });
      const url = await run({ limiter });
      const first = fetch(`${url}/slow?tag=a`);
      const second = fetch(`${url}/slow?tag=b`);
      await until(() => control.started.length === 2, 'two handlers run');
      const shed = await fetch(`${url}/slow?tag=c`);
      assert.equal(shed.status, 503);
      assert.equal(shed.headers.get('retry-after'), '1');
      assert.equal(shed.headers.get('cache-control'), 'no-store');
      assert.match(shed.headers.get('content-type') ?? '', /^application\/problem\+json/);
      const body = (await shed.json()) as Record<string, unknown>;
      assert.equal(body['type'], 'https://iana.org/assignments/http-problem-types#temporary-reduced-capacity');
      assert.equal(body['status'], 503);
      assert.equal(typeof body['detail'], 'string');
      control.release();
      assert.deepEqual(await Promise.all([first, second].map(async (r) => (await r).text())), ['ok', 'ok']);
      await releasedOnce(limiter, 2);
      assert.deepEqual(limiter.outcomes, ['success', 'success']);
      assert.deepEqual(control.started.sort(), ['a', 'b']);
    });

    it('answers 429 with statusCode: 429, in the status and in the body', async () => {
      const url = await run({ limit: 1, statusCode: 429 });
      const first = fetch(`${url}/slow?tag=a`);
      await until(() => control.started.length === 1, 'one handler runs');
      const shed = await fetch(`${url}/slow?tag=b`);
      assert.equal(shed.status, 429);
      assert.equal(((await shed.json()) as { status: number }).status, 429);
      assert.ok(Number(shed.headers.get('retry-after')) >= 1);
      control.release();
      assert.equal((await first).status, 200);
    });

    it('releases the permit of a handler that throws', async () => {
      const limiter = new RecordingLimiter({ limit: 1 });
      const url = await run({ limiter });
      for (let i = 0; i < 3; i++) assert.equal((await fetch(`${url}/fail`)).status, 500);
      await releasedOnce(limiter, 3);
      // A fast failure is no latency sample.
      assert.deepEqual(limiter.outcomes, ['ignore', 'ignore', 'ignore']);
      control.release();
      assert.equal((await fetch(`${url}/slow`)).status, 200);
    });

    it('counts a thrown timeout as a drop where the framework shows the error, and a 503, 504 or 429 answer everywhere', async () => {
      const limiter = new RecordingLimiter({ limit: 4 });
      const url = await run({ limiter });
      assert.equal((await fetch(`${url}/timeout`)).status, 500);
      for (const code of [503, 504, 429, 404]) assert.equal((await fetch(`${url}/status/${code}`)).status, code);
      await releasedOnce(limiter, 5);
      const thrown: CallOutcome = SEES_THROWN[name] ? 'drop' : 'ignore';
      assert.deepEqual(limiter.outcomes, [thrown, 'drop', 'drop', 'drop', 'success']);
    });

    it('releases the permit of a client that leaves mid-response, as ignore', async () => {
      const limiter = new RecordingLimiter({ limit: 1 });
      const url = await run({ limiter });
      const leaving = new AbortController();
      const res = await fetch(`${url}/stream`, { signal: leaving.signal });
      const reader = res.body!.getReader();
      assert.equal(new TextDecoder().decode((await reader.read()).value), 'first');
      assert.equal(limiter.inFlight, 1);
      leaving.abort();
      await releasedOnce(limiter, 1);
      assert.deepEqual(limiter.outcomes, ['ignore']);
      control.release();
      assert.equal((await fetch(`${url}/slow`)).status, 200);
    });

    it('gives up the place of a client that leaves while waiting: its handler never runs', async () => {
      const limiter = new RecordingLimiter({ limit: 1, maxQueue: 5, maxWaitMs: 10_000 });
      const url = await run({ limiter });
      const first = fetch(`${url}/slow?tag=a`);
      await until(() => control.started.length === 1, 'the first handler runs');
      const leaving = new AbortController();
      const waiting = fetch(`${url}/slow?tag=b`, { signal: leaving.signal }).catch((err: unknown) => err);
      await until(() => limiter.queued === 1, 'the second request waits');
      leaving.abort();
      assert.ok((await waiting) instanceof Error);
      await until(() => limiter.queued === 0, 'the wait line is empty');
      assert.equal(limiter.inFlight, 1);
      control.release();
      assert.equal((await first).status, 200);
      await releasedOnce(limiter, 1);
      assert.deepEqual(control.started, ['a']);
    });

    it('serves a critical request waiting in the line before a batch one that came first', async () => {
      const tierOf = (req: { header(name: string): string | undefined }): number | undefined =>
        req.header('x-tier') === 'critical' ? 0 : undefined;
      const limiter = new RecordingLimiter({ limit: 1, tiers: 2, maxQueue: 5, maxWaitMs: 10_000 });
      const url = await run({ limiter, tierOf });
      const holder = fetch(`${url}/slow?tag=holder`);
      await until(() => control.started.length === 1, 'the holder runs');
      const batch = fetch(`${url}/slow?tag=batch`);
      await until(() => limiter.queued === 1, 'the batch request waits');
      const critical = fetch(`${url}/slow?tag=critical`, { headers: { 'x-tier': 'critical' } });
      await until(() => limiter.queued === 2, 'the critical request waits');
      control.release();
      assert.deepEqual(
        await Promise.all([holder, batch, critical].map(async (r) => (await r).status)),
        [200, 200, 200],
      );
      assert.deepEqual(control.started, ['holder', 'critical', 'batch']);
      await releasedOnce(limiter, 3);
    });

    it('reads the tier from tierHeader, a bad value being the least important tier', async () => {
      const limiter = new RecordingLimiter({ limit: 1, tiers: 3, maxQueue: 5, maxWaitMs: 10_000 });
      const url = await run({ limiter, tierHeader: 'X-Priority' });
      const holder = fetch(`${url}/slow?tag=holder`);
      await until(() => control.started.length === 1, 'the holder runs');
      const bad = fetch(`${url}/slow?tag=bad`, { headers: { 'x-priority': '7' } });
      await until(() => limiter.queued === 1, 'the bad-header request waits');
      const middle = fetch(`${url}/slow?tag=middle`, { headers: { 'x-priority': '1' } });
      await until(() => limiter.queued === 2, 'the tier-1 request waits');
      control.release();
      await Promise.all([holder, bad, middle]);
      assert.deepEqual(control.started, ['holder', 'middle', 'bad']);
      await releasedOnce(limiter, 3);
    });

    it('fails the request through the framework when tierOf throws, holding no slot', async () => {
      const limiter = new RecordingLimiter({ limit: 1 });
      const url = await run({
        limiter,
        tierOf: () => {
          throw new Error('no tier');
        },
      });
      assert.equal((await fetch(`${url}/slow`)).status, 500);
      assert.equal(limiter.inFlight, 0);
      assert.deepEqual(control.started, []);
    });

    it('waits for a slot within maxWaitMs, then sheds with queue-timeout', async () => {
      const url = await run({ limit: 1, maxQueue: 1, maxWaitMs: 30, order: 'fifo' });
      const first = fetch(`${url}/slow?tag=a`);
      await until(() => control.started.length === 1, 'the first handler runs');
      const late = await fetch(`${url}/slow?tag=b`);
      assert.equal(late.status, 503);
      assert.match(((await late.json()) as { detail: string }).detail, /within the time/);
      control.release();
      assert.equal((await first).status, 200);
    });

    it('learns a limit with adaptive, and admits while under it', async () => {
      const url = await run({ adaptive: { initialLimit: 4, minLimit: 2 } });
      control.release();
      const statuses = await Promise.all(
        Array.from({ length: 4 }, () => fetch(`${url}/slow`).then(async (r) => (await r.arrayBuffer(), r.status))),
      );
      assert.deepEqual(statuses, [200, 200, 200, 200]);
    });
  });
}
