import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { longFromDouble } from '../../src/core/smooth/java-long.js';
import type { SmoothState } from '../../src/core/smooth/permit-storage.js';
import { storageOf, type SmoothModel } from '../../src/core/smooth/smooth-model.js';
import {
  FRESH_SMOOTH_STATE,
  releaseAt,
  reserveAt,
  setRateAt,
  tryReserveAt,
  type SmoothReservation,
} from '../../src/core/smooth/smooth-state.js';
import { SMOOTH_SCRIPT } from '../../src/stores/redis/scripts/smooth.js';
import { useRedis } from '../redis/setup.js';
import { runs } from '../support/sweep.js';

// The smooth script restates the rules of src/core/smooth/smooth-state.ts in Lua. This test runs
// both on the same random operations, at the same test times, and compares every wait, start and
// state cell bit for bit (the state is read back from Redis as the float64s it holds).

const redis = useRedis();

interface Op {
  readonly kind: 'reserve' | 'tryReserve' | 'setRate' | 'release';
  readonly stepMicros: number;
  readonly permits: number;
  readonly timeoutMicros: number;
  readonly rate: number;
  /** Which earlier reservation a release names (modulo how many there were). */
  readonly pick: number;
}

const rates = fc.oneof(
  fc.double({ min: 1e-3, max: 1e6, noNaN: true }),
  fc.constantFrom(0.5, 1, 2, 5, 10, 100, 1000, 333_333),
);
const models: fc.Arbitrary<SmoothModel> = fc.oneof(
  fc.oneof(fc.double({ min: 0, max: 10, noNaN: true }), fc.constantFrom(0, 1, 2.5)).map((maxBurstSeconds) => ({
    kind: 'bursty' as const,
    maxBurstSeconds,
  })),
  fc
    .record({
      warmupMicros: fc.oneof(fc.constantFrom(1, 1000, 500_000, 4_000_000), fc.integer({ min: 1, max: 1e10 })),
      coldFactor: fc.oneof(fc.constantFrom(1, 3, 10), fc.double({ min: 1, max: 50, noNaN: true })),
    })
    .map(({ warmupMicros, coldFactor }) => ({ kind: 'warmingUp' as const, warmupMicros, coldFactor })),
);
const ops: fc.Arbitrary<Op> = fc.record({
  kind: fc.constantFrom('reserve', 'reserve', 'tryReserve', 'setRate', 'release'),
  stepMicros: fc.oneof(fc.integer({ min: 0, max: 3_000_000 }), fc.integer({ min: -500_000, max: 0 })),
  permits: fc.oneof(fc.integer({ min: 1, max: 20 }), fc.constantFrom(1000)),
  timeoutMicros: fc.integer({ min: 0, max: 5_000_000 }),
  rate: rates,
  pick: fc.nat(),
});

/** The model as the script's ARGV[2..4] takes it. */
function modelArgs(model: SmoothModel): string[] {
  return model.kind === 'bursty'
    ? ['bursty', String(model.maxBurstSeconds), '0']
    : ['warmingUp', String(model.warmupMicros), String(model.coldFactor)];
}

interface Cells {
  state: SmoothState;
  version: number;
}

async function readCells(key: string): Promise<Cells> {
  const raw = await redis().client.getBuffer(key);
  assert.ok(raw !== null && raw.length === 80);
  const cell = (i: number): number => raw.readDoubleLE(8 * i);
  return {
    state: {
      storedPermits: cell(0),
      maxPermits: cell(1),
      stableIntervalMicros: cell(2),
      nextFreeMicros: BigInt(cell(3)),
    },
    version: cell(4),
  };
}

/** What a reservation's reply tells a client: enough to release it. */
interface Booked {
  readonly version: number;
  readonly pure: SmoothReservation;
}

describe('the smooth script against the pure rules', () => {
  test('random operations at random times: same waits, starts, refusals and state cells', async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(models, rates, fc.array(ops, { minLength: 1, maxLength: 30 }), async (model, rate, list) => {
        const key = `smooth-diff:${run++}`;
        const storage = storageOf(model);
        let now = 1_000_000 + run;
        let pure = setRateAt(storage, FRESH_SMOOTH_STATE, rate, BigInt(now));
        const base = (atMicros: number): string[] => [String(atMicros), ...modelArgs(model), String(rate), ''];
        await redis()
          .client.evalsha(SMOOTH_SCRIPT.sha1, 1, key, ...base(now), 'g', '', '', '')
          .catch(async () => {
            await redis().client.eval(SMOOTH_SCRIPT.source, 1, key, ...base(now), 'g', '', '', '');
          });
        const booked: Booked[] = [];
        for (const op of list) {
          now = Math.max(0, now + op.stepMicros);
          const at = BigInt(now);
          let args: string[];
          let expected: [number, number, number];
          let reservation: SmoothReservation | undefined;
          if (op.kind === 'reserve' || op.kind === 'tryReserve') {
            const timeout = op.kind === 'tryReserve' ? String(op.timeoutMicros) : '';
            args = ['r', String(op.permits), timeout, ''];
            reservation =
              op.kind === 'reserve'
                ? reserveAt(storage, pure, op.permits, at)
                : tryReserveAt(storage, pure, op.permits, longFromDouble(op.timeoutMicros), at);
            expected =
              reservation === undefined
                ? [0, 0, 0]
                : [1, Number(reservation.waitMicros), Number(reservation.startMicros)];
            if (reservation !== undefined) pure = reservation.state;
          } else if (op.kind === 'setRate') {
            args = ['s', String(op.rate), '', ''];
            pure = setRateAt(storage, pure, op.rate, at);
            expected = [1, 0, 0];
          } else {
            const target = booked[op.pick % Math.max(1, booked.length)];
            if (target === undefined) continue;
            args = ['x', String(target.version), '', ''];
            const released = releaseAt(pure, target.pure, at);
            if (released !== undefined) pure = released;
            expected = [released === undefined ? 0 : 1, 0, 0];
          }
          const reply = (await redis().client.evalsha(SMOOTH_SCRIPT.sha1, 1, key, ...base(now), ...args)) as unknown[];
          assert.equal(reply[0], now, 'the script ran at the test time');
          assert.deepEqual(reply.slice(1, 4), expected, `${op.kind} at ${now}`);
          const cells = await readCells(key);
          assert.deepEqual(cells.state, pure, `state after ${op.kind} at ${now}`);
          assert.equal(reply[4], cells.version);
          if (reservation !== undefined) booked.push({ version: cells.version, pure: reservation });
        }
      }),
      { numRuns: runs(300) },
    );
  });
});
