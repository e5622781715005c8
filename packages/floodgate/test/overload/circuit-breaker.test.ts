import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { CircuitBreaker, FloodgateError, ManualClock, type CircuitBreakerOptions } from 'floodgate';

// Tables of steps at fixed times on a ManualClock. Each step is [atMs, action, expected]:
//   'ok' | 'fail' [durationMs]  a call asks admit() and, unless refused, ends at once: `${admission}/${state after}`
//   'admit'                     asks admit() and leaves the call in flight: the admission
//   'late ok' | 'late fail'     a call sent earlier (not a probe) ends now: the state after
//   'probe ok' | 'probe fail'   the probe in flight ends now: the state after
//   'abandon'                   the probe in flight ends saying nothing: the state after
//   'state' | 'retry' | 'idle'  reads state, retryInMs() or idle
type Step = readonly [atMs: number, action: string, expected: unknown];

function setup(options: Omit<CircuitBreakerOptions, 'clock' | 'onStateChange'>) {
  const clock = new ManualClock(0);
  const events: string[] = [];
  const breaker = new CircuitBreaker({
    ...options,
    clock,
    onStateChange: (e) => events.push(`${e.from}>${e.to} ${e.reason} @${e.atMs}`),
  });
  return { clock, breaker, events };
}

function act(breaker: CircuitBreaker, action: string): unknown {
  const [verb, arg] = action.split(' ');
  switch (verb) {
    case 'ok':
    case 'fail': {
      const admission = breaker.admit();
      if (admission !== 'refuse')
        breaker.record({ ok: verb === 'ok', durationMs: Number(arg ?? 0), probe: admission === 'probe' });
      return `${admission}/${breaker.state}`;
    }
    case 'admit':
      return breaker.admit();
    case 'late':
    case 'probe':
      breaker.record({ ok: arg === 'ok', probe: verb === 'probe' });
      return breaker.state;
    case 'abandon':
      breaker.abandoned(true);
      return breaker.state;
    case 'state':
      return breaker.state;
    case 'retry':
      return breaker.retryInMs();
    case 'idle':
      return breaker.idle;
  }
  throw new Error(`unknown step ${action}`);
}

function run(options: Omit<CircuitBreakerOptions, 'clock' | 'onStateChange'>, steps: readonly Step[]): string[] {
  const { clock, breaker, events } = setup(options);
  for (const [atMs, action, expected] of steps) {
    clock.set(atMs);
    assert.deepEqual(act(breaker, action), expected, `at ${atMs} ms: ${action}`);
  }
  return events;
}

describe('CircuitBreaker: each trigger opens at its threshold, not one call before', () => {
  test('consecutiveFailures: the count-th failure in a row, whatever minCalls; a success breaks the streak', () => {
    const events = run({ trigger: { type: 'consecutiveFailures', count: 3 }, minCalls: 50 }, [
      [0, 'fail', 'send/closed'],
      [1, 'fail', 'send/closed'],
      [2, 'ok', 'send/closed'],
      [3, 'fail', 'send/closed'],
      [4, 'fail', 'send/closed'],
      [5, 'fail', 'send/open'],
      [6, 'ok', 'refuse/open'],
    ]);
    assert.deepEqual(events, ['closed>open consecutiveFailures @5']);
  });

  test('errorCount: the count-th failure in the window', () => {
    const events = run({ trigger: { type: 'errorCount', count: 3 }, minCalls: 0 }, [
      [0, 'fail', 'send/closed'],
      [1, 'ok', 'send/closed'],
      [2, 'fail', 'send/closed'],
      [3, 'ok', 'send/closed'],
      [4, 'fail', 'send/open'],
    ]);
    assert.deepEqual(events, ['closed>open errorCount @4']);
  });

  test('errorCount waits for minCalls calls, and then opens on a success', () => {
    const events = run({ trigger: { type: 'errorCount', count: 3 }, minCalls: 5 }, [
      [0, 'fail', 'send/closed'],
      [1, 'fail', 'send/closed'],
      [2, 'fail', 'send/closed'],
      [3, 'ok', 'send/closed'],
      [4, 'ok', 'send/open'],
    ]);
    assert.deepEqual(events, ['closed>open errorCount @4']);
  });

  test('errorRatio: the call that brings the failures to the ratio', () => {
    const events = run({ trigger: { type: 'errorRatio', ratio: 0.5 }, minCalls: 2 }, [
      [0, 'ok', 'send/closed'],
      [1, 'ok', 'send/closed'],
      [2, 'ok', 'send/closed'],
      [3, 'fail', 'send/closed'], // 1/4
      [4, 'fail', 'send/closed'], // 2/5
      [5, 'fail', 'send/open'], // 3/6
    ]);
    assert.deepEqual(events, ['closed>open errorRatio @5']);
  });

  test('errorRatio waits for minCalls, even at 100% failures', () => {
    run({ trigger: { type: 'errorRatio', ratio: 0.5 }, minCalls: 4 }, [
      [0, 'fail', 'send/closed'],
      [0, 'fail', 'send/closed'],
      [0, 'fail', 'send/closed'],
      [0, 'ok', 'send/open'], // 3/4, and 4 calls
    ]);
  });

  test('errorRatio 0.07 opens at 7 failures in 100 (no floating-point miss: 0.07 * 100 is 7.000000000000001)', () => {
    const steps: Step[] = Array.from({ length: 99 }, (_, i): Step => [i, i < 93 ? 'ok' : 'fail', 'send/closed']);
    steps.push([99, 'fail', 'send/open']);
    run({ trigger: { type: 'errorRatio', ratio: 0.07 }, minCalls: 100 }, steps);
  });

  test('slowCallRatio: calls over slowCallMs (not at it), errors only when slow', () => {
    const events = run({ trigger: { type: 'slowCallRatio', slowCallMs: 100, ratio: 0.5 }, minCalls: 4 }, [
      [0, 'ok 100', 'send/closed'], // exactly slowCallMs: not slow
      [1, 'fail 10', 'send/closed'], // a fast error: not slow
      [2, 'ok 101', 'send/closed'], // 1 slow of 3, under minCalls
      [3, 'fail 150', 'send/open'], // 2 slow of 4
    ]);
    assert.deepEqual(events, ['closed>open slowCallRatio @3']);
  });

  test('slowCallRatio: fast calls keep it closed whatever their errors', () => {
    const steps: Step[] = Array.from({ length: 20 }, (_, i): Step => [i, 'fail 100', 'send/closed']);
    run({ trigger: { type: 'slowCallRatio', slowCallMs: 100, ratio: 0.1 }, minCalls: 1 }, steps);
  });
});

describe('CircuitBreaker: the window slides in buckets', () => {
  const options = { trigger: { type: 'errorCount', count: 3 }, minCalls: 0, windowMs: 1000, buckets: 10 } as const;

  test('a call is forgotten when its bucket leaves the ring, not one ms before', () => {
    run(options, [
      [0, 'fail', 'send/closed'],
      [950, 'fail', 'send/closed'],
      [1000, 'fail', 'send/closed'], // the failure at 0 (bucket 0-99) is gone
      [1899, 'fail', 'send/open'], // 950 (bucket 900-999) still counts: 950, 1000, 1899
    ]);
    run(options, [
      [0, 'fail', 'send/closed'],
      [950, 'fail', 'send/closed'],
      [999, 'fail', 'send/open'],
    ]);
    run(options, [
      [0, 'fail', 'send/closed'],
      [950, 'fail', 'send/closed'],
      [1000, 'fail', 'send/closed'],
      [1900, 'fail', 'send/closed'], // 950 is gone too: 1000 and 1900
    ]);
  });

  test('minCalls counts only the calls in the window', () => {
    run({ trigger: { type: 'errorRatio', ratio: 0.5 }, minCalls: 3, windowMs: 1000, buckets: 10 }, [
      [0, 'fail', 'send/closed'],
      [10, 'fail', 'send/closed'],
      [1000, 'fail', 'send/closed'], // one call in the window now
      [1001, 'fail', 'send/closed'],
      [1002, 'fail', 'send/open'],
    ]);
  });

  test('a gap longer than the window forgets everything', () => {
    run(options, [
      [0, 'fail', 'send/closed'],
      [1, 'fail', 'send/closed'],
      [50_000, 'fail', 'send/closed'],
      [50_001, 'fail', 'send/closed'],
      [50_002, 'fail', 'send/open'],
    ]);
  });

  test('a clock going backwards counts in the newest bucket: not forgotten early, nothing comes back', () => {
    run(options, [
      [1500, 'fail', 'send/closed'],
      [200, 'fail', 'send/closed'], // counted with 1500, in bucket 1500-1599
      [2499, 'fail', 'send/open'],
    ]);
    run(options, [
      [1500, 'fail', 'send/closed'],
      [200, 'fail', 'send/closed'],
      [2500, 'fail', 'send/closed'], // both gone with bucket 1500-1599
    ]);
  });
});

describe('CircuitBreaker: open, half-open and back', () => {
  test('open for openMs, then one probe; its failure reopens, its success closes', () => {
    const events = run({ trigger: { type: 'consecutiveFailures', count: 1 }, openMs: 100 }, [
      [10, 'fail', 'send/open'],
      [60, 'retry', 50],
      [60, 'idle', false],
      [109, 'ok', 'refuse/open'],
      [110, 'admit', 'probe'],
      [110, 'state', 'half-open'],
      [110, 'admit', 'refuse'],
      [115, 'idle', false],
      [120, 'probe fail', 'open'],
      [120, 'retry', 100],
      [219, 'admit', 'refuse'],
      [220, 'admit', 'probe'],
      [230, 'probe ok', 'closed'],
      [230, 'retry', 0],
      [230, 'idle', true],
      [231, 'ok', 'send/closed'],
    ]);
    assert.deepEqual(events, [
      'closed>open consecutiveFailures @10',
      'open>half-open probe-due @110',
      'half-open>open probe-failed @120',
      'open>half-open probe-due @220',
      'half-open>closed probe-succeeded @230',
    ]);
  });

  test('closing empties the window: the failures that opened it no longer count', () => {
    run({ trigger: { type: 'errorCount', count: 2 }, minCalls: 0, openMs: 100 }, [
      [0, 'fail', 'send/closed'],
      [1, 'fail', 'send/open'],
      [101, 'ok', 'probe/closed'],
      [102, 'fail', 'send/closed'],
      [103, 'fail', 'send/open'],
    ]);
  });

  test('under slowCallRatio a slow probe fails, a fast one closes', () => {
    const events = run({ trigger: { type: 'slowCallRatio', slowCallMs: 50, ratio: 1 }, minCalls: 1, openMs: 100 }, [
      [0, 'ok 51', 'send/open'],
      [100, 'ok 51', 'probe/open'],
      [200, 'fail 10', 'probe/open'], // a failed probe fails, even fast
      [300, 'ok 50', 'probe/closed'],
    ]);
    assert.deepEqual(
      events.map((e) => e.split(' ')[1]),
      ['slowCallRatio', 'probe-due', 'probe-failed', 'probe-due', 'probe-failed', 'probe-due', 'probe-succeeded'],
    );
  });

  test('a probe outliving probeTimeoutMs fails: reopened as of its timeout', () => {
    const events = run({ trigger: { type: 'errorCount', count: 1 }, minCalls: 0, openMs: 100, probeTimeoutMs: 50 }, [
      [0, 'fail', 'send/open'],
      [100, 'admit', 'probe'],
      [150, 'state', 'half-open'], // exactly probeTimeoutMs: still in time
      [150, 'retry', 100], // if it fails now: 150 + openMs
      [151, 'state', 'open'],
      [151, 'retry', 99], // open until 150 + 100
      [249, 'admit', 'refuse'],
      [250, 'admit', 'probe'],
      [260, 'probe ok', 'closed'],
    ]);
    assert.deepEqual(events, [
      'closed>open errorCount @0',
      'open>half-open probe-due @100',
      'half-open>open probe-timeout @150',
      'open>half-open probe-due @250',
      'half-open>closed probe-succeeded @260',
    ]);
  });

  test('a timeout found late still reopens as of the timeout: the next probe may be due at once', () => {
    const events = run({ trigger: { type: 'errorCount', count: 1 }, minCalls: 0, openMs: 100, probeTimeoutMs: 50 }, [
      [0, 'fail', 'send/open'],
      [100, 'admit', 'probe'],
      [400, 'admit', 'probe'],
    ]);
    assert.deepEqual(events.slice(2), ['half-open>open probe-timeout @150', 'open>half-open probe-due @400']);
  });

  test('without probeTimeoutMs a probe is waited for; retryInMs counts openMs from now', () => {
    run({ trigger: { type: 'errorCount', count: 1 }, minCalls: 0, openMs: 100 }, [
      [0, 'fail', 'send/open'],
      [100, 'admit', 'probe'],
      [1_000_000, 'state', 'half-open'],
      [1_000_000, 'retry', 100],
      [1_000_000, 'admit', 'refuse'],
    ]);
  });

  test('halfOpenProbes 3: three probes, the rest refused; all three must succeed', () => {
    const events = run(
      { trigger: { type: 'errorCount', count: 1 }, minCalls: 0, openMs: 100, halfOpenProbes: 3, probeTimeoutMs: 40 },
      [
        [0, 'fail', 'send/open'],
        [100, 'admit', 'probe'],
        [100, 'retry', 0],
        [101, 'admit', 'probe'],
        [102, 'admit', 'probe'],
        [102, 'admit', 'refuse'],
        [102, 'retry', 138], // the oldest probe times out at 140, then openMs
        [110, 'probe ok', 'half-open'],
        [111, 'probe ok', 'half-open'],
        [111, 'admit', 'refuse'], // a passed probe does not free its place
        [112, 'probe ok', 'closed'],
      ],
    );
    assert.deepEqual(events.slice(1), ['open>half-open probe-due @100', 'half-open>closed probe-succeeded @112']);
  });

  test('halfOpenProbes 3: one failure reopens; the other probes then end as late calls, changing nothing', () => {
    const events = run({ trigger: { type: 'errorCount', count: 1 }, minCalls: 0, openMs: 100, halfOpenProbes: 3 }, [
      [0, 'fail', 'send/open'],
      [100, 'admit', 'probe'],
      [100, 'admit', 'probe'],
      [100, 'admit', 'probe'],
      [110, 'probe ok', 'half-open'],
      [111, 'probe fail', 'open'],
      [112, 'probe ok', 'open'],
      [112, 'retry', 99],
    ]);
    assert.deepEqual(events.slice(1), ['open>half-open probe-due @100', 'half-open>open probe-failed @111']);
  });

  test('an abandoned probe frees its place for another', () => {
    run({ trigger: { type: 'errorCount', count: 1 }, minCalls: 0, openMs: 100 }, [
      [0, 'fail', 'send/open'],
      [100, 'admit', 'probe'],
      [101, 'abandon', 'half-open'],
      [101, 'idle', true],
      [101, 'admit', 'probe'],
      [101, 'admit', 'refuse'],
      [102, 'probe ok', 'closed'],
    ]);
  });

  test('a clock going backwards never makes a probe due, nor times one out, early', () => {
    run({ trigger: { type: 'errorCount', count: 1 }, minCalls: 0, openMs: 100, probeTimeoutMs: 50 }, [
      [1000, 'fail', 'send/open'],
      [0, 'admit', 'refuse'],
      [0, 'retry', 1100],
      [1100, 'admit', 'probe'],
      [500, 'state', 'half-open'],
      [1150, 'state', 'half-open'],
      [1151, 'state', 'open'],
    ]);
  });

  test("refused calls are not calls: they neither delay the probe nor take a probe's place", () => {
    const steps: Step[] = [
      [0, 'fail', 'send/closed'],
      [0, 'fail', 'send/open'],
    ];
    for (let ms = 1; ms < 100; ms++) steps.push([ms, 'fail', 'refuse/open'], [ms, 'ok', 'refuse/open']);
    steps.push([99, 'retry', 1], [100, 'admit', 'probe'], [100, 'admit', 'probe'], [100, 'admit', 'refuse']);
    steps.push([101, 'probe ok', 'half-open'], [101, 'probe ok', 'closed'], [102, 'fail', 'send/closed']);
    run({ trigger: { type: 'errorCount', count: 2 }, minCalls: 0, openMs: 100, halfOpenProbes: 2 }, steps);
  });
});

describe('CircuitBreaker: calls that end after the circuit opened', () => {
  test('consecutiveFailures follows them: a success closes, a failure restarts openMs', () => {
    const events = run({ trigger: { type: 'consecutiveFailures', count: 2 }, openMs: 100 }, [
      [0, 'admit', 'send'],
      [0, 'admit', 'send'],
      [0, 'admit', 'send'],
      [0, 'admit', 'send'],
      [10, 'late fail', 'closed'],
      [20, 'late fail', 'open'],
      [50, 'late fail', 'open'],
      [50, 'retry', 100],
      [149, 'admit', 'refuse'],
      [149, 'late ok', 'closed'],
      [149, 'ok', 'send/closed'],
    ]);
    assert.deepEqual(events, ['closed>open consecutiveFailures @20', 'open>closed call-succeeded @149']);
  });

  test('consecutiveFailures: a success of an earlier call closes a half-open circuit too', () => {
    const events = run({ trigger: { type: 'consecutiveFailures', count: 1 }, openMs: 100 }, [
      [0, 'admit', 'send'],
      [0, 'fail', 'send/open'],
      [100, 'admit', 'probe'],
      [101, 'late ok', 'closed'],
      [102, 'probe fail', 'open'], // its round was decided without it: it ends as a late call, a failure
    ]);
    assert.deepEqual(events.slice(2), ['half-open>closed call-succeeded @101', 'closed>open consecutiveFailures @102']);
  });

  test('the other triggers ignore them: the window only counts while closed', () => {
    const events = run({ trigger: { type: 'errorCount', count: 2 }, minCalls: 0, openMs: 100 }, [
      [0, 'admit', 'send'],
      [0, 'admit', 'send'],
      [0, 'admit', 'send'],
      [0, 'fail', 'send/closed'],
      [1, 'fail', 'send/open'],
      [10, 'late ok', 'open'],
      [50, 'late fail', 'open'],
      [50, 'retry', 51],
      [101, 'ok', 'probe/closed'],
      [102, 'late fail', 'closed'], // the window was emptied: one failure
    ]);
    assert.deepEqual(events, [
      'closed>open errorCount @1',
      'open>half-open probe-due @101',
      'half-open>closed probe-succeeded @101',
    ]);
  });
});

describe('CircuitBreaker.tryAcquire', () => {
  test('a call measures its own duration on the clock, and ends once', () => {
    const { clock, breaker, events } = setup({
      trigger: { type: 'slowCallRatio', slowCallMs: 100, ratio: 0.5 },
      minCalls: 1,
    });
    const fast = breaker.tryAcquire()!;
    assert.deepEqual([fast.probe, fast.startedMs], [false, 0]);
    clock.set(100);
    assert.equal(fast.succeeded(), true);
    assert.equal(breaker.state, 'closed', '100 ms is not slow');
    const slow = breaker.tryAcquire()!;
    clock.set(201);
    assert.equal(slow.succeeded(), true);
    assert.equal(breaker.state, 'open', '101 ms is slow: 1 of 2');
    assert.deepEqual([slow.succeeded(), slow.failed(), slow.abandon()], [false, false, false]);
    assert.equal(breaker.tryAcquire(), undefined, 'refused while open');
    assert.deepEqual(events, ['closed>open slowCallRatio @201']);
  });

  test('a second ending records nothing', () => {
    const { breaker } = setup({ trigger: { type: 'consecutiveFailures', count: 1 } });
    const call = breaker.tryAcquire()!;
    assert.equal(call.succeeded(), true);
    assert.equal(call.failed(), false);
    assert.equal(breaker.state, 'closed', 'the failure after the success was not counted');
  });

  test('each probe ends itself: a timed-out probe ending late is not taken for the next one', () => {
    const { clock, breaker, events } = setup({
      trigger: { type: 'errorCount', count: 1 },
      minCalls: 0,
      openMs: 100,
      probeTimeoutMs: 50,
    });
    breaker.tryAcquire()!.failed();
    clock.set(100);
    const first = breaker.tryAcquire()!;
    assert.equal(first.probe, true);
    clock.set(250);
    const second = breaker.tryAcquire()!;
    assert.equal(second.probe, true);
    assert.equal(first.succeeded(), true);
    assert.equal(breaker.state, 'half-open', "the first probe's late success is not the second's");
    assert.equal(second.failed(), true);
    assert.equal(breaker.state, 'open');
    assert.deepEqual(
      events.map((e) => e.split(' ')[1]),
      ['errorCount', 'probe-due', 'probe-timeout', 'probe-due', 'probe-failed'],
    );
  });

  test('with several probes out, each ends its own', () => {
    const { clock, breaker } = setup({
      trigger: { type: 'errorCount', count: 1 },
      minCalls: 0,
      openMs: 100,
      halfOpenProbes: 2,
    });
    breaker.tryAcquire()!.failed();
    clock.set(100);
    const [a, b] = [breaker.tryAcquire()!, breaker.tryAcquire()!];
    assert.equal(b.abandon(), true);
    const c = breaker.tryAcquire()!;
    assert.equal(c.probe, true, "b's place was freed");
    assert.equal(breaker.tryAcquire(), undefined);
    a.succeeded();
    assert.equal(breaker.state, 'half-open');
    c.succeeded();
    assert.equal(breaker.state, 'closed');
  });

  test("events carry the breaker's name", () => {
    const seen: unknown[] = [];
    const breaker = new CircuitBreaker({
      trigger: { type: 'errorCount', count: 1 },
      minCalls: 0,
      name: 'prices',
      clock: new ManualClock(7),
      onStateChange: (e) => seen.push(e),
    });
    breaker.tryAcquire()!.failed();
    assert.deepEqual(seen, [{ breaker: 'prices', from: 'closed', to: 'open', reason: 'errorCount', atMs: 7 }]);
    assert.equal(breaker.name, 'prices');
  });
});

describe('CircuitBreaker options', () => {
  const trigger = { type: 'errorRatio', ratio: 0.5 } as const;
  const bad: Array<[unknown, string]> = [
    [undefined, 'CircuitBreaker.options'],
    [{}, 'CircuitBreaker.trigger'],
    [{ trigger: 'errorRatio' }, 'CircuitBreaker.trigger'],
    [{ trigger: { type: 'errors', ratio: 0.5 } }, 'CircuitBreaker.trigger'],
    [{ trigger: { type: 'errorRatio', ratio: 0 } }, 'CircuitBreaker.trigger.ratio'],
    [{ trigger: { type: 'errorRatio', ratio: 1.01 } }, 'CircuitBreaker.trigger.ratio'],
    [{ trigger: { type: 'errorRatio', ratio: Number.NaN } }, 'CircuitBreaker.trigger.ratio'],
    [{ trigger: { type: 'errorRatio', count: 3 } }, 'CircuitBreaker.trigger.count'],
    [{ trigger: { type: 'slowCallRatio', ratio: 0.5 } }, 'CircuitBreaker.trigger.slowCallMs'],
    [{ trigger: { type: 'slowCallRatio', ratio: 0.5, slowCallMs: -1 } }, 'CircuitBreaker.trigger.slowCallMs'],
    [{ trigger: { type: 'errorCount', count: 0 } }, 'CircuitBreaker.trigger.count'],
    [{ trigger: { type: 'errorCount', count: 1.5 } }, 'CircuitBreaker.trigger.count'],
    [{ trigger: { type: 'consecutiveFailures' } }, 'CircuitBreaker.trigger.count'],
    [{ trigger, windowMs: 0 }, 'CircuitBreaker.windowMs'],
    [{ trigger, windowMs: 10.5 }, 'CircuitBreaker.windowMs'],
    [{ trigger, buckets: 0 }, 'CircuitBreaker.buckets'],
    [{ trigger, windowMs: 1000, buckets: 3 }, 'CircuitBreaker.buckets'],
    [{ trigger, minCalls: -1 }, 'CircuitBreaker.minCalls'],
    [{ trigger, openMs: 0 }, 'CircuitBreaker.openMs'],
    [{ trigger, openMs: Infinity }, 'CircuitBreaker.openMs'],
    [{ trigger, halfOpenProbes: 0 }, 'CircuitBreaker.halfOpenProbes'],
    [{ trigger, probeTimeoutMs: 0 }, 'CircuitBreaker.probeTimeoutMs'],
    [{ trigger, probeTimeoutMs: Number.NaN }, 'CircuitBreaker.probeTimeoutMs'],
    [{ trigger, clock: {} }, 'CircuitBreaker.clock'],
    [{ trigger, name: 5 }, 'CircuitBreaker.name'],
    [{ trigger, onStateChange: 'log' }, 'CircuitBreaker.onStateChange'],
    [{ trigger, openTimeMs: 100 }, 'CircuitBreaker.openTimeMs'],
  ];
  for (const [options, option] of bad) {
    test(`${option}: ${JSON.stringify(options) ?? 'undefined'}`, () => {
      assert.throws(
        () => new CircuitBreaker(options as CircuitBreakerOptions),
        (error: unknown) => {
          assert.ok(error instanceof FloodgateError, `a FloodgateError, got ${String(error)}`);
          assert.equal(error.code, 'INVALID_OPTION');
          assert.equal(error.option, option);
          assert.ok(error.message.startsWith(`${option} `), error.message);
          return true;
        },
      );
    });
  }

  test('the edges that are allowed', () => {
    for (const options of [
      { trigger, minCalls: 0, probeTimeoutMs: Infinity },
      { trigger: { type: 'errorRatio', ratio: 1 }, windowMs: 1, buckets: 1 },
      { trigger: { type: 'slowCallRatio', slowCallMs: 0, ratio: 0.001 }, openMs: 0.5 },
    ] as const) {
      assert.ok(new CircuitBreaker(options) instanceof CircuitBreaker);
    }
  });

  test('the messages say how to fix it', () => {
    assert.throws(
      () => new CircuitBreaker({ trigger: { type: 'errorRatio', ratio: 2 } }),
      /ratio must be a share of the calls above 0 and at most 1 .*got 2$/,
    );
    assert.throws(
      () => new CircuitBreaker({ trigger, windowMs: 1000, buckets: 3 }),
      /a divisor of 1000 such as 10 for 1000, got 3$/,
    );
    assert.throws(
      () => new CircuitBreaker({ trigger: { type: 'errorRatio', count: 3 } as never }),
      /count is not an option of the errorRatio trigger; it takes ratio$/,
    );
    assert.throws(
      () => new CircuitBreaker({ trigger: { type: 'nope' } as never }),
      /one of \{ type: 'slowCallRatio'.*got type "nope"$/,
    );
  });
});
