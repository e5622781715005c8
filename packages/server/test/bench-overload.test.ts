// The overload bench's own parts (bench/overload): the upstream keeps its slots and its FIFO queue
// and works for clients who left; the load generator is an open loop; the stats read records right.
import assert from 'node:assert/strict';
import { createServer, request, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, describe, it } from 'node:test';
import { recoveredAfterMs, windowStats } from '../../../bench/overload/analyse.js';
import { FAILED, TIMED_OUT, poissonArrivals, runOpenLoop, type LoadRecords } from '../../../bench/overload/load.js';
import { parseResponseEnd } from '../../../bench/overload/raw-connection.js';
import { startUpstream, type UpstreamState } from '../../../bench/overload/upstream.js';

function get(
  port: number,
  path: string,
  method = 'GET',
): { done: Promise<{ status: number; atMs: number }>; abort: () => void } {
  const req = request({ host: '127.0.0.1', port, path, method, agent: false });
  const done = new Promise<{ status: number; atMs: number }>((resolve, reject) => {
    req.on('response', (res: IncomingMessage) =>
      res.on('end', () => resolve({ status: res.statusCode!, atMs: performance.now() })).resume(),
    );
    req.on('error', reject);
  });
  req.end();
  // Marked handled at once: a request the test aborts or the upstream drops rejects before anyone awaits it.
  done.catch(() => {});
  return { done, abort: () => req.destroy() };
}

async function stateOf(port: number): Promise<UpstreamState> {
  return (await fetch(`http://127.0.0.1:${port}/_control/state`)).json() as Promise<UpstreamState>;
}

async function until(check: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 500 && !(await check()); i++) await new Promise((r) => setTimeout(r, 5));
}

describe('bench/overload upstream', () => {
  const servers: Server[] = [];
  after(() => {
    for (const s of servers) {
      s.closeAllConnections();
      s.close();
    }
  });

  it('works on as many requests as it has slots, queues the rest first in, first out, and answers each after its service time', async () => {
    const { server, port } = await startUpstream({ slots: 2, serviceMs: 40 });
    servers.push(server);
    const startedMs = performance.now();
    const calls = Array.from({ length: 6 }, () => get(port, '/work'));
    let state = await stateOf(port);
    await until(async () => {
      state = await stateOf(port);
      return state.busy + state.queued + state.served === 6;
    });
    if (state.served === 0) assert.deepEqual([state.busy, state.queued], [2, 4]);
    const answers = await Promise.all(calls.map((c) => c.done));
    assert.deepEqual(
      answers.map((a) => a.status),
      [200, 200, 200, 200, 200, 200],
    );
    // Two slots of 40 ms: the i-th answer (0-based, in time order) cannot come before (floor(i / 2) + 1) × 40 ms.
    const ends = answers.map((a) => a.atMs - startedMs).sort((a, b) => a - b);
    ends.forEach((endMs, i) =>
      assert.ok(endMs >= (Math.floor(i / 2) + 1) * 40 - 1, `answer ${i} came after ${endMs.toFixed(1)} ms`),
    );
    assert.equal((await stateOf(port)).served, 6);
  });

  it('finishes the work of a request whose client left, holding its slot, and drops only the answer', async () => {
    const { server, port } = await startUpstream({ slots: 1, serviceMs: 200 });
    servers.push(server);
    const sentMs = performance.now();
    const first = get(port, '/work');
    await until(async () => (await stateOf(port)).busy === 1);
    first.abort();
    const second = get(port, '/work');
    const { atMs } = await second.done;
    // The abandoned first kept the only slot for its whole service time, then the second had its own.
    assert.ok(atMs - sentMs >= 2 * 200 - 1, `answered after ${(atMs - sentMs).toFixed(1)} ms`);
    const state = await stateOf(port);
    assert.deepEqual([state.served, state.abandoned], [1, 1]);
  });

  it('changes its capacity from the control endpoint, and a reset drops the queue', async () => {
    const { server, port } = await startUpstream({ slots: 4, serviceMs: 200 });
    servers.push(server);
    assert.deepEqual(
      await (await fetch(`http://127.0.0.1:${port}/_control/capacity?slots=1&serviceMs=10`, { method: 'POST' })).json(),
      { slots: 1, serviceMs: 10, busy: 0, queued: 0, served: 0, abandoned: 0 },
    );
    const calls = Array.from({ length: 3 }, () => get(port, '/work'));
    await until(async () => (await stateOf(port)).served === 3);
    await Promise.all(calls.map((c) => c.done));
    await fetch(`http://127.0.0.1:${port}/_control/capacity?serviceMs=500`, { method: 'POST' });
    const stuck = Array.from({ length: 3 }, () => get(port, '/work'));
    await until(async () => (await stateOf(port)).queued === 2);
    const reset = (await (
      await fetch(`http://127.0.0.1:${port}/_control/reset?slots=8&serviceMs=20`, { method: 'POST' })
    ).json()) as UpstreamState;
    assert.deepEqual([reset.slots, reset.serviceMs, reset.queued, reset.busy], [8, 20, 0, 1]);
    const settled = await Promise.allSettled(stuck.map((c) => c.done));
    assert.deepEqual(
      settled.slice(1).map((s) => s.status),
      ['rejected', 'rejected'],
    );
    stuck[0]!.abort();
  });
});

describe('bench/overload load generator', () => {
  it('draws the same Poisson arrivals from the same seed, ascending, at each phase rate', () => {
    const phases = [
      { durationMs: 100_000, perSecond: 100 },
      { durationMs: 100_000, perSecond: 0 },
      { durationMs: 100_000, perSecond: 400 },
    ];
    const a = poissonArrivals(phases, 7);
    assert.deepEqual(poissonArrivals(phases, 7), a);
    assert.ok(a.every((t, i) => i === 0 || t >= a[i - 1]!));
    const inPhase = (from: number, to: number): number => a.filter((t) => t >= from && t < to).length;
    assert.ok(Math.abs(inPhase(0, 100_000) - 10_000) < 300);
    assert.equal(inPhase(100_000, 200_000), 0);
    assert.ok(Math.abs(inPhase(200_000, 300_000) - 40_000) < 600);
  });

  it('is an open loop: every request is sent at its time although none is answered', async () => {
    let received = 0;
    const server = createServer(() => received++);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    try {
      const plan = {
        url: `http://127.0.0.1:${port}/work`,
        phases: [{ durationMs: 300, perSecond: 100 }],
        timeoutMs: 600,
        seed: 3,
        startAtEpochMs: Date.now() + 50,
      };
      const records = await runOpenLoop(plan);
      assert.equal(records.dueMs.length, poissonArrivals(plan.phases, plan.seed).length);
      assert.ok(records.dueMs.length > 10);
      assert.equal(received, records.dueMs.length);
      assert.ok(records.status.every((s) => s === TIMED_OUT));
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });

  it('sends the tier header of each request from the mix', async () => {
    const seen: string[] = [];
    const server = createServer((req, res) => {
      seen.push(String(req.headers['x-priority']));
      res.end('ok');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    try {
      const tierMix = {
        header: 'x-priority',
        tiers: [
          { name: 'top', weight: 1 },
          { name: 'bulk', weight: 3 },
        ],
      };
      const records = await runOpenLoop({
        url: `http://127.0.0.1:${port}/`,
        phases: [{ durationMs: 200, perSecond: 200 }],
        timeoutMs: 1000,
        seed: 5,
        startAtEpochMs: Date.now(),
        tierMix,
      });
      assert.deepEqual([...seen].sort(), records.tier.map((t) => tierMix.tiers[t]!.name).sort());
      assert.ok(seen.includes('top') && seen.includes('bulk'));
      assert.ok(records.status.every((s) => s === 200));
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });
});

describe('bench/overload raw connection', () => {
  it('finds the end of a response by Content-Length, by chunks, or at the head when the connection ends it', () => {
    const lengthOf = 'HTTP/1.1 429 Too Many Requests\r\nContent-Length: 5\r\n\r\n';
    assert.equal(parseResponseEnd(lengthOf + 'abc'), undefined);
    assert.deepEqual(parseResponseEnd(lengthOf + 'abcdeHTTP/1.1 200'), {
      status: 429,
      end: lengthOf.length + 5,
      close: false,
    });
    const chunked = 'HTTP/1.1 503 Service Unavailable\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n';
    assert.equal(parseResponseEnd(chunked + '3\r\nabc\r\n'), undefined);
    assert.equal(parseResponseEnd(chunked + '3\r\nabc\r\n0\r\n'), undefined);
    assert.deepEqual(parseResponseEnd(chunked + '3\r\nabc\r\n0\r\n\r\n'), {
      status: 503,
      end: chunked.length + 13,
      close: true,
    });
    assert.deepEqual(parseResponseEnd('HTTP/1.1 200 OK\r\nx: y\r\n\r\nrest'), { status: 200, end: 25, close: true });
    assert.equal(parseResponseEnd('HTTP/1.1 200 OK\r\n'), undefined);
  });
});

describe('bench/overload stats', () => {
  const records: LoadRecords = {
    startEpochMs: 0,
    dueMs: [0, 100, 200, 300, 400, 500, 600, 700],
    lagMs: [0, 0, 0, 0, 0, 0, 0, 1],
    latencyMs: [20, 30, NaN, 2, 25, NaN, 21, 22],
    status: [200, 200, TIMED_OUT, 503, 200, FAILED, 200, 200],
    tier: [0, 0, 0, 0, 0, 0, 0, 0],
    errors: { ECONNRESET: 1 },
  };

  it('counts goodput by due time, shed answers apart, and a p99 of Infinity when more than 1% of the admitted got no answer', () => {
    const w = windowStats(records, 0, 800);
    assert.deepEqual([w.sent, w.good, w.shed, w.timedOut, w.failed], [8, 5, 1, 1, 1]);
    assert.equal(w.goodPerSecond, 5 / 0.8);
    assert.equal(w.admittedP99Ms, Infinity);
    assert.equal(w.shedP99Ms, 2);
    assert.equal(windowStats(records, 600, 800).admittedP99Ms, 22);
  });

  it('finds when every bucket from then on had the share of good answers', () => {
    assert.equal(recoveredAfterMs(records, 0, 800, { stepMs: 200, share: 0.5 }), 400);
    assert.equal(recoveredAfterMs(records, 0, 600, { stepMs: 200, share: 1 }), undefined);
  });
});
