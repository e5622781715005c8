import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  inverseNormal,
  lognormalSigma,
  ServiceTime,
  simulateService,
  uniformAt,
  type ServiceSpec,
} from '../src/index.js';
import { EventQueue, RANK } from '../src/service/event-queue.js';
import { Upstream } from '../src/service/upstream.js';

const spec = (over: Partial<ServiceSpec>): ServiceSpec => ({
  slots: 1,
  serviceMs: { distribution: 'constant', meanMs: 10 },
  capacity: [],
  timeoutMs: 1000,
  retries: undefined,
  tiers: [{ name: 'all', share: 1 }],
  ...over,
});

/** Submits one job per entry of `submitsMs` and returns [job index, answer time] in the order answered. */
function answers(service: ServiceSpec, submitsMs: number[]): Array<[number, number]> {
  const events = new EventQueue();
  const done: Array<[number, number]> = [];
  const upstream = new Upstream<{ quantile: number; id: number }>(service, events, (job, atMs) =>
    done.push([job.id, atMs]),
  );
  submitsMs.forEach((atMs, id) => events.push(atMs, RANK.retry, (t) => upstream.submit({ quantile: 0.5, id }, t)));
  while (events.size > 0) events.runNext();
  return done;
}

describe('the upstream service', () => {
  it('works on `slots` calls at once and queues the rest first in, first out', () => {
    assert.deepEqual(answers(spec({ slots: 2 }), [0, 0, 0, 1]), [
      [0, 10],
      [1, 10],
      [2, 20],
      [3, 20],
    ]);
  });

  it('starts queued calls when slots are added, and lets calls finish when slots are taken away', () => {
    const steps = [
      { atMs: 5, slots: 2, serviceMs: undefined },
      { atMs: 12, slots: 1, serviceMs: { distribution: 'constant' as const, meanMs: 30 } },
    ];
    // 0 starts at 0 (done 10); at 5 a second slot starts 1 (done 15); at 10, 2 starts (done 20);
    // from 12 one slot of 30 ms: 3 waits until both are done, starts at 20, done 50.
    assert.deepEqual(answers(spec({ capacity: steps }), [0, 0, 0, 0]), [
      [0, 10],
      [1, 15],
      [2, 20],
      [3, 50],
    ]);
  });
});

describe('the event queue', () => {
  it('runs events by time, then rank (answers before timeouts), then the order pushed', () => {
    const events = new EventQueue();
    const ran: string[] = [];
    events.push(5, RANK.timeout, () => ran.push('timeout@5'));
    events.push(5, RANK.answer, () => ran.push('answer@5'));
    events.push(1, RANK.retry, () => ran.push('retry@1'));
    events.push(5, RANK.answer, () => ran.push('answer@5 second'));
    events.push(5, RANK.capacity, () => ran.push('capacity@5'));
    while (events.size > 0) events.runNext();
    assert.deepEqual(ran, ['retry@1', 'capacity@5', 'answer@5', 'answer@5 second', 'timeout@5']);
    assert.equal(events.runNext(), Infinity);
  });
});

describe('service times', () => {
  it('meet the standard normal quantiles', () => {
    for (const [p, z] of [
      [0.5, 0],
      [0.975, 1.959963985],
      [0.01, -2.326347874],
      [0.999, 3.090232306],
      [0.00001, -4.264890794],
    ] as const) {
      assert.ok(Math.abs(inverseNormal(p) - z) < 1e-8, `Φ⁻¹(${p}) = ${inverseNormal(p)}, expected ${z}`);
    }
  });

  it('have the mean asked for, and the lognormal its p99', () => {
    const n = 200_000;
    for (const distribution of ['constant', 'exponential', 'lognormal'] as const) {
      const time = new ServiceTime(
        distribution === 'lognormal' ? { distribution, meanMs: 20, p99Ms: 60 } : { distribution, meanMs: 20 },
      );
      const draws = Float64Array.from({ length: n }, (_, i) => time.drawMs(uniformAt(9, 2, i))).sort();
      const mean = draws.reduce((a, b) => a + b, 0) / n;
      assert.ok(Math.abs(mean - 20) < 0.2, `${distribution}: mean ${mean}`);
      if (distribution === 'lognormal')
        assert.ok(Math.abs(draws[Math.floor(0.99 * n)]! - 60) < 1.5, `p99 ${draws[Math.floor(0.99 * n)]}`);
    }
    assert.ok(Math.abs(lognormalSigma(20, 60) - 0.5335) < 1e-3);
  });

  it('are drawn per call, from a hash: the same in every lane', () => {
    assert.equal(uniformAt(7, 2, 12345), uniformAt(7, 2, 12345));
    assert.notEqual(uniformAt(7, 2, 12345), uniformAt(7, 2, 12346));
    assert.notEqual(uniformAt(7, 2, 12345), uniformAt(8, 2, 12345));
    assert.notEqual(uniformAt(7, 2, 12345), uniformAt(7, 3, 12345));
  });
});

/** A scenario of calls replayed at the given times into a one-slot, 10 ms service. */
function replay(atMs: number[], service: Record<string, unknown>, protections: unknown[], durationMs = 200) {
  return simulateService({
    durationMs,
    bucketMs: 10,
    traffic: [{ type: 'trace', rows: atMs.map((t) => ({ atMs: t })) }],
    service: { slots: 1, serviceMs: 10, ...service },
    protections,
  });
}

describe('a lane, step by step', () => {
  it('without protection, does the work of clients that left', () => {
    // One slot, 10 ms a call, clients wait 15 ms: answers at 10 (in time), 20 and 30 (too late).
    const lane = replay([0, 0, 0], { timeoutMs: 15 }, ['none']).lanes[0]!;
    assert.deepEqual(lane.totals, {
      requests: 3,
      succeeded: 1,
      sent: 3,
      answered: 1,
      shed: 0,
      timedOut: 2,
      wasted: 2,
      peakBacklog: 3,
    });
    assert.deepEqual(
      [lane.tiers[0]!.latencyMs.p50, lane.tiers[0]!.latencyMs.p99],
      [15, 15],
      'a timed-out call counts as the timeout',
    );
  });

  it('with a fixed limit, sheds what finds every slot taken', () => {
    const lane = replay([0, 0, 0], {}, [{ concurrency: { limit: 2 } }]).lanes[0]!;
    assert.deepEqual([lane.totals.answered, lane.totals.shed], [2, 1]);
    assert.deepEqual([lane.tiers[0]!.latencyMs.p50, lane.tiers[0]!.latencyMs.p99], [10, 20]);
  });

  it('frees a slot when the client times out, while the service still works on the abandoned call', () => {
    // Limit 1, 50 ms a call, clients wait 20 ms: the first times out at 20 and frees the permit;
    // the second (at 25) is admitted but waits behind the abandoned work until 50 and times out at 45.
    const lane = replay([0, 25], { serviceMs: 50, timeoutMs: 20 }, [{ concurrency: { limit: 1 } }]).lanes[0]!;
    assert.deepEqual([lane.totals.shed, lane.totals.timedOut, lane.totals.wasted], [0, 2, 2]);
  });

  it('retries a shed call after its back-off, and counts each attempt in the step it was sent', () => {
    const result = replay([0, 0], { retries: { max: 1, backoffMs: 20 } }, [{ concurrency: { limit: 1 } }]);
    const lane = result.lanes[0]!;
    assert.deepEqual(lane.totals, {
      requests: 2,
      succeeded: 2,
      sent: 3,
      answered: 2,
      shed: 1,
      timedOut: 0,
      wasted: 0,
      peakBacklog: 1,
    });
    const t = lane.series.tiers[0]!;
    assert.deepEqual(
      [t.sent[0], t.shed[0], t.sent[2], t.answered[2]],
      [2, 1, 1, 1],
      'the retry was sent at 20 ms, in step 2',
    );
    assert.deepEqual(
      [t.requests[0], t.succeeded[0]],
      [2, 2],
      'both requests succeeded, in the step of their first attempt',
    );
    assert.equal(lane.series.goodput[1], 1, 'the first answer, at 10 ms, is goodput in step 1');
    assert.equal(lane.series.goodput[3], 1, 'the retry, answered at 30 ms, in step 3');
  });

  it('backs off by the multiplier, less the jitter, and sends nothing at or after the end', () => {
    const retries = { max: 3, backoffMs: 10, multiplier: 3 };
    // Timeout 5 ms, a service of 50 ms: every attempt times out. Attempts at 0, 5 + 10 = 15 and
    // 20 + 30 = 50; the third retry would go at 55 + 90 = 145, after the end (100 ms): not sent.
    const lane = replay([0], { serviceMs: 50, timeoutMs: 5, retries }, [{ concurrency: { limit: 5 } }], 100).lanes[0]!;
    const sentAt = [...lane.series.tiers[0]!.sent.entries()].filter(([, n]) => n > 0).map(([step]) => step);
    assert.deepEqual(sentAt, [0, 1, 5]);
    const jittered = replay(
      [0],
      { serviceMs: 50, timeoutMs: 5, retries: { ...retries, jitterRatio: 1 } },
      [{ concurrency: { limit: 5 } }],
      100,
    ).lanes[0]!;
    assert.ok(jittered.totals.sent >= 3, 'full jitter only shortens the waits');
  });

  it('gives each arrival the same tier in every lane, by the shares', () => {
    const result = simulateService({
      durationMs: 10_000,
      traffic: [{ type: 'poisson', ratePerSecond: 2000 }],
      service: { slots: 100, serviceMs: 1, tiers: [{ name: 'gold', share: 0.1 }, { share: 0.9 }] },
      protections: ['none', { concurrency: { limit: 1000 } }],
    });
    const share = result.tierOf.reduce((n, t) => n + (t === 0 ? 1 : 0), 0) / result.arrivals.length;
    assert.ok(Math.abs(share - 0.1) < 0.01, `gold share ${share}`);
    assert.deepEqual(
      result.lanes[0]!.tiers.map((t) => t.requests),
      result.lanes[1]!.tiers.map((t) => t.requests),
    );
    assert.equal(result.lanes[1]!.tiers[1]!.name, 'tier 1');
  });
});
