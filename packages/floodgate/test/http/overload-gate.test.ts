/**
 * The framework-neutral parts of the concurrency middlewares, without a socket: the options and
 * their errors, the shed answer, tiers, the outcome of each ending, the once-released hold, and
 * event-loop pressure over a histogram double and over node's own monitor.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { eventLoopPressure } from '../../src/http/adapters/node.js';
import {
  CallHold,
  ConcurrencyGate,
  EventLoopPressure,
  OptionFunctionError,
  callOutcome,
  isTimeoutError,
  watchEventLoop,
  type CallEnding,
  type DelayHistogram,
  type HttpConcurrencyOptions,
} from '../../src/http/index.js';
import { ClientIpResolver } from '../../src/http/client-ip.js';
import { ConcurrencyLimiter, ConcurrencyPermit, FloodgateError, ManualClock, type Admission } from '../../src/index.js';
import { FakeView, memoryLogger } from './support.js';

const view = (headers: Record<string, string> = {}): FakeView =>
  new FakeView(new ClientIpResolver({}, memoryLogger()), { headers, route: '/r' });

function permitOf(admission: Admission | Promise<Admission>): ConcurrencyPermit {
  assert.ok(admission instanceof ConcurrencyPermit, 'admitted at once');
  return admission;
}

/** A histogram double: samples in ms (with node's 10 ms resolution added, as node records them). */
class FakeHistogram implements DelayHistogram {
  samplesMs: number[] = [];
  enabled = false;
  get count(): number {
    return this.samplesMs.length;
  }
  get mean(): number {
    return (this.samplesMs.reduce((a, b) => a + b, 0) / this.samplesMs.length) * 1e6;
  }
  percentile(p: number): number {
    const sorted = [...this.samplesMs].sort((a, b) => a - b);
    return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]! * 1e6;
  }
  reset(): void {
    this.samplesMs = [];
  }
  enable(): boolean {
    this.enabled = true;
    return true;
  }
  disable(): boolean {
    this.enabled = false;
    return true;
  }
  /** record adds samples of `delayMs` each, as node would record them (the resolution on top). */
  record(delayMs: number, times = 1): void {
    for (let i = 0; i < times; i++) this.samplesMs.push(10 + delayMs);
  }
}

describe('ConcurrencyGate options', () => {
  const limiter = new ConcurrencyLimiter({ limit: 1 });
  const cases: [string, HttpConcurrencyOptions, string, RegExp][] = [
    ['no limit at all', {}, 'limit', /give limit .*adaptive .*limiter/],
    ['limit and adaptive', { limit: 2, adaptive: true }, 'limit', /not both/],
    ['a limit of 0', { limit: 0 }, 'limit', /^limit must be a whole number of at least 1, got 0/],
    ['a negative maxQueue', { limit: 2, maxQueue: -1 }, 'maxQueue', /^maxQueue must be/],
    ['a bad maxWaitMs', { limit: 2, maxWaitMs: Number.NaN }, 'maxWaitMs', /^maxWaitMs must be/],
    ['zero tiers', { limit: 2, tiers: 0 }, 'tiers', /^tiers must be/],
    ['a bad order', { limit: 2, order: 'lifo' as 'fifo' }, 'order', /^order must be/],
    ['a bad adaptive option', { adaptive: { minLimit: 0 } }, 'adaptive.minLimit', /adaptive.minLimit/],
    [
      'a status other than 503 and 429',
      { limit: 2, statusCode: 500 as 503 },
      'statusCode',
      /^statusCode must be 503 or 429, got 500/,
    ],
    [
      'a tierOf that is no function',
      { limit: 2, tierOf: 1 as unknown as () => number },
      'tierOf',
      /^tierOf must be a function/,
    ],
    ['a bad tierHeader', { limit: 2, tierHeader: 'x priority' }, 'tierHeader', /^tierHeader must be a header name/],
    ['tierOf and tierHeader', { limit: 2, tierOf: () => 0, tierHeader: 'x-tier' }, 'tierHeader', /not both/],
    [
      'a limiter that is not a ConcurrencyLimiter',
      { limiter: {} as ConcurrencyLimiter },
      'limiter',
      /^limiter must be a ConcurrencyLimiter/,
    ],
    ['a limiter and maxQueue', { limiter, maxQueue: 5 }, 'maxQueue', /set maxQueue on that ConcurrencyLimiter/],
    [
      'a limiter and eventLoopDelay',
      { limiter, eventLoopDelay: { maxMs: 50 } },
      'eventLoopDelay',
      /with limiter given/,
    ],
    ['eventLoopDelay on a fixed limit', { limit: 2, eventLoopDelay: { maxMs: 50 } }, 'eventLoopDelay', /give adaptive/],
    [
      'eventLoopDelay without maxMs',
      { adaptive: true, eventLoopDelay: {} as { maxMs: number } },
      'eventLoopDelay.maxMs',
      /is required/,
    ],
    [
      'eventLoopDelay with a bad resolution',
      { adaptive: true, eventLoopDelay: { maxMs: 50, resolutionMs: 0.5 } },
      'eventLoopDelay.resolutionMs',
      /whole number/,
    ],
    ['a bad trustProxy', { limit: 2, trustProxy: 'yes' as unknown as number }, 'trustProxy', /^trustProxy must be/],
  ];
  for (const [what, options, option, message] of cases) {
    it(`refuses ${what}, naming ${option}`, () => {
      assert.throws(
        () => new ConcurrencyGate(options, () => new FakeHistogram()),
        (err: unknown) =>
          err instanceof FloodgateError &&
          err.code === 'INVALID_OPTION' &&
          err.option === option &&
          message.test(err.message),
      );
    });
  }

  it('refuses eventLoopDelay where no monitor can be had', () => {
    assert.throws(() => new ConcurrencyGate({ adaptive: true, eventLoopDelay: { maxMs: 50 } }), {
      code: 'INVALID_OPTION',
      option: 'eventLoopDelay',
      message: /monitorEventLoopDelay/,
    });
  });

  it('starts no event-loop sampling when the options are refused', () => {
    const histogram = new FakeHistogram();
    assert.throws(
      () => new ConcurrencyGate({ adaptive: true, maxQueue: -1, eventLoopDelay: { maxMs: 50 } }, () => histogram),
      { option: 'maxQueue' },
    );
    assert.equal(histogram.enabled, false);
  });

  it('uses the limiter given, shared by every gate given it', () => {
    const shared = new ConcurrencyLimiter({ limit: 1 });
    const a = new ConcurrencyGate({ limiter: shared });
    const b = new ConcurrencyGate({ limiter: shared });
    assert.equal(a.limiter, shared);
    const permit = permitOf(a.admit(undefined, undefined));
    assert.equal((b.admit(undefined, undefined) as { allowed: boolean }).allowed, false);
    permit.release();
    assert.equal(shared.inFlight, 0);
  });
});

describe('ConcurrencyGate answers', () => {
  it('sheds with the status, Retry-After in whole seconds of at least 1, and a problem+json body per reason', () => {
    const gate = new ConcurrencyGate({ limit: 1 });
    const answer = gate.refusal({ allowed: false, reason: 'queue-full', tier: 0, retryAfterMs: 1 });
    assert.equal(answer.statusCode, 503);
    assert.deepEqual(answer.headers, [
      ['retry-after', '1'],
      ['cache-control', 'no-store'],
      ['content-type', 'application/problem+json'],
    ]);
    assert.deepEqual(JSON.parse(answer.body), {
      type: 'https://iana.org/assignments/http-problem-types#temporary-reduced-capacity',
      title: 'Request cannot be satisfied due to temporary server capacity constraints',
      status: 503,
      detail: 'every slot is taken and the line of requests waiting for one is full',
    });
    assert.equal(gate.refusal({ allowed: false, reason: 'limit', tier: 0, retryAfterMs: 2001 }).headers[0]![1], '3');
    const teapot = new ConcurrencyGate({ limit: 1, statusCode: 429 }).refusal({
      allowed: false,
      reason: 'limit',
      tier: 0,
      retryAfterMs: 0,
    });
    assert.equal(teapot.statusCode, 429);
    assert.equal(teapot.headers[0]![1], '1');
    assert.equal((JSON.parse(teapot.body) as { status: number }).status, 429);
  });

  it('takes the tier from tierOf, failing the request with an OptionFunctionError naming tierOf', () => {
    const gate = new ConcurrencyGate({ limit: 10, tiers: 2, tierOf: (req) => Number(req.header('x-tier')) });
    assert.equal(permitOf(gate.admit(view({ 'x-tier': '0' }), undefined)).tier, 0);
    for (const bad of ['5', '-1', '0.5']) {
      assert.throws(
        () => gate.admit(view({ 'x-tier': bad }), undefined),
        (err: unknown) => err instanceof OptionFunctionError && err.option === 'tierOf' && err.route === '/r',
      );
    }
    const throwing = new ConcurrencyGate({
      limit: 10,
      tierOf: () => {
        throw new Error('boom');
      },
    });
    assert.throws(() => throwing.admit(view(), undefined), {
      name: 'OptionFunctionError',
      option: 'tierOf',
      message: /the tierOf option threw: boom/,
    });
    assert.equal(gate.limiter.inFlight, 1);
  });

  it('takes the tier from tierHeader; a missing, bad or unknown value is the least important tier', () => {
    const gate = new ConcurrencyGate({ limit: 10, tiers: 3, tierHeader: 'X-Priority' });
    const tierOf = (headers: Record<string, string>): number => permitOf(gate.admit(view(headers), undefined)).tier;
    assert.deepEqual(
      [
        tierOf({ 'x-priority': '0' }),
        tierOf({ 'x-priority': ' 1 ' }),
        tierOf({}),
        tierOf({ 'x-priority': 'high' }),
        tierOf({ 'x-priority': '3' }),
        tierOf({ 'x-priority': '1e3' }),
      ],
      [0, 1, 2, 2, 2, 2],
    );
  });

  it('gives a route its own tier over tierOf', () => {
    const gate = new ConcurrencyGate({ limit: 10, tiers: 2, tierOf: () => 1 });
    assert.equal(permitOf(gate.admit(view(), undefined, 0)).tier, 0);
  });

  it('counts a request as a drop under event-loop pressure, backing an adaptive limit off', () => {
    const clock = new ManualClock(0);
    const histogram = new FakeHistogram();
    const gate = new ConcurrencyGate(
      {
        adaptive: { initialLimit: 10, minSamples: 1, windowMs: 100 },
        eventLoopDelay: { maxMs: 20, windowMs: 10_000 },
        clock,
      },
      () => histogram,
    );
    assert.equal(histogram.enabled, true);
    histogram.record(50, 5);
    for (let i = 0; i < 2; i++) {
      const permit = permitOf(gate.admit(undefined, undefined));
      clock.advance(100);
      permit.release('success');
    }
    assert.equal(gate.limiter.limit, 9);
    gate.close();
    assert.equal(histogram.enabled, false);
  });
});

describe('callOutcome', () => {
  const timeout = Object.assign(new Error('t'), { name: 'TimeoutError' });
  const cases: [string, CallEnding, string][] = [
    ['a 200', { statusCode: 200, completed: true }, 'success'],
    ['a 404', { statusCode: 404, completed: true }, 'success'],
    ['a 503', { statusCode: 503, completed: true }, 'drop'],
    ['a 504', { statusCode: 504, completed: true }, 'drop'],
    ['a 429', { statusCode: 429, completed: true }, 'drop'],
    ['a 500', { statusCode: 500, completed: true }, 'ignore'],
    ['a thrown error', { statusCode: 500, completed: true, error: new Error('x') }, 'ignore'],
    ['a thrown error answered 503', { statusCode: 503, completed: true, error: new Error('x') }, 'drop'],
    ['a thrown timeout', { statusCode: 500, completed: true, error: timeout }, 'drop'],
    ['a client that left', { statusCode: 200, completed: false }, 'ignore'],
    ['a client that left during a 503', { statusCode: 503, completed: false }, 'ignore'],
    ['a thrown timeout, the client gone', { statusCode: 500, completed: false, error: timeout }, 'drop'],
  ];
  for (const [what, ending, outcome] of cases)
    it(`is ${outcome} for ${what}`, () => assert.equal(callOutcome(ending), outcome));

  it('knows a timeout by its name, code or 504 status', () => {
    const yes = [
      timeout,
      { code: 'ETIMEDOUT' },
      { code: 'UND_ERR_HEADERS_TIMEOUT' },
      new FloodgateError('STORE_TIMEOUT', 'slow'),
      { status: 504 },
      { statusCode: 504 },
      new DOMException('t', 'TimeoutError'),
    ];
    const no = [
      new Error('x'),
      { code: 'ECONNRESET' },
      { status: 500 },
      'TimeoutError',
      null,
      undefined,
      new DOMException('a', 'AbortError'),
    ];
    assert.deepEqual(
      yes.map(isTimeoutError),
      yes.map(() => true),
    );
    assert.deepEqual(
      no.map(isTimeoutError),
      no.map(() => false),
    );
  });
});

describe('CallHold', () => {
  const done: CallEnding = { statusCode: 200, completed: true };

  it('releases its permit once, on the first end, however many follow', () => {
    const limiter = new ConcurrencyLimiter({ limit: 1 });
    const hold = new CallHold();
    assert.equal(hold.take(permitOf(limiter.acquire())), true);
    hold.end(done);
    hold.end({ statusCode: 0, completed: false });
    assert.equal(limiter.inFlight, 0);
  });

  it('aborts the wait when the request ends before a permit', async () => {
    const limiter = new ConcurrencyLimiter({ limit: 1, maxQueue: 1, maxWaitMs: 10_000 });
    const first = permitOf(limiter.acquire());
    const hold = new CallHold();
    const waiting = limiter.acquire({ signal: hold.signal });
    hold.end({ statusCode: 200, completed: false });
    assert.equal(hold.endedEarly, true);
    assert.deepEqual(await waiting, { allowed: false, reason: 'aborted', tier: 0, retryAfterMs: 1 });
    first.release();
  });

  it('releases a permit granted after the request ended as ignore, and says so', () => {
    const limiter = new ConcurrencyLimiter({ adaptive: { initialLimit: 2 } });
    const hold = new CallHold();
    hold.end(done);
    const permit = permitOf(limiter.acquire());
    assert.equal(hold.take(permit), false);
    assert.equal(permit.released, true);
    assert.equal(limiter.inFlight, 0);
  });

  it('uses the error it was told of for the outcome', () => {
    const outcomes: string[] = [];
    const limiter = new ConcurrencyLimiter({ limit: 1 });
    const hold = new CallHold();
    const permit = permitOf(limiter.acquire());
    const release = permit.release.bind(permit);
    permit.release = (outcome) => (outcomes.push(outcome ?? 'success'), release(outcome));
    hold.take(permit);
    hold.error = Object.assign(new Error('t'), { code: 'ETIMEDOUT' });
    hold.end(done);
    assert.deepEqual(outcomes, ['drop']);
  });
});

describe('EventLoopPressure', () => {
  it('is pressed while the running or the last window has a p99 or mean delay above maxMs', () => {
    const clock = new ManualClock(0);
    const h = new FakeHistogram();
    const pressure = watchEventLoop(() => h, { maxMs: 20, windowMs: 1000 }, 'eventLoopDelay', clock);
    assert.equal(h.enabled, true);
    assert.equal(pressure.pressed(), false);
    h.record(5, 99);
    assert.equal(pressure.pressed(), false, 'resolution is taken off: 15 ms samples are 5 ms of delay');
    h.record(200, 2);
    assert.equal(pressure.pressed(), true, 'p99 above, the mean not');
    clock.advance(1000);
    assert.equal(pressure.pressed(), true, 'the last window still counts');
    assert.equal(h.count, 0, 'the window was reset');
    clock.advance(1000);
    assert.equal(pressure.pressed(), false, 'two quiet windows later');
    h.record(25, 100);
    assert.equal(pressure.pressed(), true, 'mean above');
    clock.set(500);
    assert.equal(pressure.pressed(), true, 'a clock set back starts a new window');
    assert.equal(h.count, 0);
    pressure.close();
    h.record(500);
    assert.equal(pressure.pressed(), false);
    assert.equal(h.enabled, false);
  });

  it("sees a blocked loop through node's monitor", async () => {
    const pressure: EventLoopPressure = eventLoopPressure({ maxMs: 30, windowMs: 60_000, resolutionMs: 5 });
    try {
      await new Promise((resolve) => setTimeout(resolve, 20));
      const until = performance.now() + 120;
      while (performance.now() < until);
      await new Promise((resolve) => setTimeout(resolve, 20));
      assert.equal(pressure.pressed(), true);
    } finally {
      pressure.close();
    }
  });

  it('refuses bad options, naming them', () => {
    assert.throws(() => eventLoopPressure({ maxMs: -1 }), {
      code: 'INVALID_OPTION',
      option: 'eventLoopPressure.maxMs',
    });
    assert.throws(() => eventLoopPressure({ maxMs: 10, windowMs: 0 }), {
      code: 'INVALID_OPTION',
      option: 'eventLoopPressure.windowMs',
    });
  });
});
