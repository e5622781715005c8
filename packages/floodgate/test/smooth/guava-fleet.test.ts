import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { startRedisServer, type RedisServers } from '../support/redis-server.js';
import { guavaMissing, startGuava, type Guava } from './guava/guava.js';
import { LineProcess } from './guava/line-process.js';
import { createLine, randomScript, runOnFleet, runOnGuava, type FleetModel } from './guava/fleet-script.js';
import type { Reservation } from './guava/fleet-worker.js';
import { storageOf } from '../../src/core/smooth/smooth-model.js';
import { FRESH_SMOOTH_STATE, reserveAt, setRateAt } from '../../src/core/smooth/smooth-state.js';

// The fleet's smooth limiter against real Guava (Debian's libguava-java, driven by
// guava/FloodgateGuavaDriver.java, compiled here against the jar).
//
// How Guava is driven, and why that is sound: Guava's RateLimiter reads time only through its
// SleepingStopwatch, and the constructors taking one are package-private (Guava's own
// RateLimiterTest reaches them from inside com.google.common.util.concurrent). The driver sits in
// that package too, on the class path beside the jar (not sealed), and gives Guava a stopwatch
// that moves only when slept on. Every wait it prints is computed by Guava's unmodified classes:
// acquire and tryAcquire sleep on that stopwatch (time moves on by the wait), reserve returns the
// wait of callers arriving at the same moment without sleeping.
//
// 1. Scripts: the same steps, issued one at a time from any of three processes on one Redis (each
//    with its own client, store and line, in test mode so the script's time is the scripts' time),
//    give the same answers as one Guava limiter, to the microsecond.
// 2. Real time: four processes acquiring at once on the server's clock. Replayed in Redis's order
//    (each reservation's version) at the server times it was made, one Guava limiter gives every
//    reservation the same wait, and the fleet's admissions are spaced by 1/rate, with the burst
//    Guava allows. The in-process rules (smooth-state.ts) get the same replay, so this part runs
//    without Java too.
// 3. Late answers: the same, with Redis's answers reaching their process late: 0-50 ms at the
//    library's defaults (10,000 acquires; the adaptive timeout rises above the delays), mostly
//    fast with rare 30-50 ms stalls at the defaults (10,000; the timeout stays at its 25 ms floor
//    and cuts the stalls off), and 0-50 ms under a fixed 10 ms timeout that cuts most scripts off.
//    Each acquire must resolve to the wait of the reservation Redis made for it: none is answered
//    by the failure policy while its reservation stands on the fleet's schedule.

const WORKER = fileURLToPath(new URL('./guava/fleet-worker.ts', import.meta.url));

function startWorker(args: object): LineProcess {
  return new LineProcess(
    process.execPath,
    ['--conditions=floodgate-source', '--import', 'tsx', WORKER, JSON.stringify(args)],
    'a fleet worker',
  );
}

describe('the Redis smooth limiter against real Guava', async () => {
  const missing = await guavaMissing();
  let servers: RedisServers;
  let guava: Guava;
  before(async () => {
    servers = await startRedisServer();
    if (missing === undefined) guava = await startGuava();
  });
  after(async () => {
    await guava?.close();
    await servers?.stop();
  });

  test('scripts of acquires, tryAcquires, reserves, sleeps and rate changes from three processes', async (t) => {
    if (missing !== undefined) return t.skip(`real Guava cannot run here: ${missing}`);
    const workers = [0, 1, 2].map(() => startWorker({ mode: 'script', port: servers.ports[0]! }));
    try {
      for (let seed = 1; seed <= 24; seed++) {
        const script = randomScript(seed, workers.length, 80);
        const expected = await runOnGuava(guava, script);
        const actual = await runOnFleet(workers, script, `script-${seed}`);
        assert.deepEqual(actual, expected, `seed ${seed}: ${createLine(script.model)}`);
      }
    } finally {
      await Promise.all(workers.map((w) => w.close()));
    }
  });

  for (const model of [
    { kind: 'bursty', rate: 100, maxBurstSeconds: 0.05 },
    { kind: 'warmingUp', rate: 100, warmupMicros: 300_000, coldFactor: 3 },
  ] satisfies FleetModel[]) {
    test(`four processes acquiring at once, ${model.kind}: Guava's waits, admissions 1/rate apart`, async (t) => {
      const name = `realtime-${model.kind}`;
      const workers = [0, 1, 2, 3].map(() =>
        startWorker({ mode: 'realtime', port: servers.ports[0]!, name, model, lanes: 2, count: 20 }),
      );
      await Promise.all(workers.map((w) => w.ask('ready?')));
      const outputs = await Promise.all(
        workers.map(async (w) => {
          const line = await w.ask('go');
          await w.close();
          return JSON.parse(line) as { reservations: Reservation[] };
        }),
      );
      const all = outputs.flatMap((o) => o.reservations).sort((a, b) => a.version - b.version);
      assert.equal(all.length, 4 * 2 * 20);
      assertSpacing(model, all);
      replayOnModel(model, all);
      if (missing !== undefined) t.diagnostic(`not replayed on real Guava: ${missing}`);
      else await replayOnGuava(guava, model, all);
    });
  }

  for (const late of [
    { what: "0-50 ms late, the library's defaults", lanes: 25, count: 100, store: { defaults: true } },
    {
      what: "with rare stalls, the library's defaults",
      lanes: 25,
      count: 100,
      store: { defaults: true, spikes: true },
    },
    { what: '0-50 ms late, a 10 ms store timeout', lanes: 10, count: 50, store: { timeoutMs: 10 } },
  ]) {
    test(`four processes, Redis answering ${late.what}: each acquire waits its own reservation, Guava's`, async (t) => {
      const model: FleetModel = { kind: 'bursty', rate: 2000, maxBurstSeconds: 0.01 };
      const name = `late-${late.what}`;
      const workers = [1, 2, 3, 4].map((seed) =>
        startWorker({
          mode: 'realtime',
          port: servers.ports[0]!,
          name,
          model,
          ...late,
          ...late.store,
          delayMs: 50,
          seed,
        }),
      );
      await Promise.all(workers.map((w) => w.ask('ready?')));
      const outputs = await Promise.all(
        workers.map(async (w) => {
          const line = await w.ask('go');
          await w.close();
          return JSON.parse(line) as { reservations: Reservation[]; waitedMicros: number[]; cutOffs: number };
        }),
      );
      const calls = 4 * late.lanes * late.count;
      outputs.forEach((o, i) => {
        const reserved = o.reservations.map((r) => r.waitMicros).sort((a, b) => a - b);
        const waited = [...o.waitedMicros].sort((a, b) => a - b);
        assert.deepEqual(waited, reserved, `process ${i + 1}: each acquire resolved to its reservation's wait`);
      });
      const all = outputs.flatMap((o) => o.reservations).sort((a, b) => a.version - b.version);
      assert.equal(all.length, calls, 'one reservation per acquire, none given back');
      replayOnModel(model, all);
      assertSpacing(model, all);
      const cutOffs = outputs.reduce((n, o) => n + o.cutOffs, 0);
      t.diagnostic(`${cutOffs} scripts cut off by the store's timeout`);
      if ('timeoutMs' in late.store) assert.ok(cutOffs > 0, 'the 10 ms timeout cut scripts off');
      if (missing !== undefined) t.diagnostic(`not replayed on real Guava: ${missing}`);
      else await replayOnGuava(guava, model, all);
    });
  }
});

/**
 * replayOnGuava feeds the reservations, in the order Redis made them, to one Guava limiter at the
 * same times (relative to the first, which created the limiter) and checks each wait.
 */
async function replayOnGuava(guava: Guava, model: FleetModel, all: readonly Reservation[]): Promise<void> {
  await guava.ask(createLine(model));
  let atMicros = all[0]!.nowMicros;
  for (const r of all) {
    assert.ok(r.nowMicros >= atMicros, 'the server clock never went back');
    await guava.ask(`sleep ${r.nowMicros - atMicros}`);
    atMicros = r.nowMicros;
    const wait = Number(await guava.ask(`reserve ${r.permits}`));
    assert.equal(r.waitMicros, wait, `reservation ${r.version} at ${r.nowMicros}`);
    assert.equal(r.startMicros, Math.max(r.nowMicros, r.startMicros), 'starts are never before their moment');
  }
}

/** replayOnModel is {@link replayOnGuava} on the in-process rules (smooth-state.ts), which run without Java. */
function replayOnModel(model: FleetModel, all: readonly Reservation[]): void {
  const storage = storageOf(
    model.kind === 'bursty'
      ? { kind: 'bursty', maxBurstSeconds: model.maxBurstSeconds }
      : { kind: 'warmingUp', warmupMicros: model.warmupMicros, coldFactor: model.coldFactor },
  );
  const origin = all[0]!.nowMicros;
  let state = setRateAt(storage, FRESH_SMOOTH_STATE, model.rate, 0n);
  for (const r of all) {
    const reservation = reserveAt(storage, state, r.permits, BigInt(r.nowMicros - origin));
    assert.equal(r.waitMicros, Number(reservation.waitMicros), `reservation ${r.version} at ${r.nowMicros}`);
    state = reservation.state;
  }
}

/**
 * assertSpacing checks the fleet's schedule against Guava's promise: between any two starts, the
 * fleet admits at most what the rate allows over the time between them (one per 1/rate) plus the
 * permits that can be stored (the burst), plus the first. Stored permits come only from idle time,
 * so a fleet that keeps the limiter busy is spaced by 1/rate. (The replays are the exact check.)
 */
function assertSpacing(model: FleetModel, all: readonly Reservation[]): void {
  const intervalMicros = 1e6 / model.rate;
  const maxStored =
    model.kind === 'bursty'
      ? model.maxBurstSeconds * model.rate
      : (0.5 * model.warmupMicros) / intervalMicros +
        (2 * model.warmupMicros) / (intervalMicros + intervalMicros * model.coldFactor);
  const starts = all.map((r) => r.startMicros).sort((a, b) => a - b);
  for (let i = 0; i < starts.length; i++) {
    for (let j = i + 1; j < starts.length; j++) {
      // Guava truncates each reservation's fresh wait to whole µs: up to 1 µs lost per start.
      const allowed = maxStored + (starts[j]! - starts[i]! + (j - i + 1)) / intervalMicros + 1;
      assert.ok(j - i + 1 <= allowed + 1e-9, `${j - i + 1} starts within ${starts[j]! - starts[i]!} µs`);
    }
  }
}
