import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import type { SmoothState } from '../../src/core/smooth/permit-storage.js';
import { storageOf, type SmoothModel } from '../../src/core/smooth/smooth-model.js';
import { FRESH_SMOOTH_STATE, releaseAt, reserveAt, setRateAt } from '../../src/core/smooth/smooth-state.js';
import { runs } from '../support/sweep.js';

// releaseAt's promise: a reservation released while it is the latest and not yet due leaves the
// state exactly as it was before the reservation (so the limiter goes on as if it never was made);
// one that is due, or that anything came after, is not released.

const models: fc.Arbitrary<SmoothModel> = fc.oneof(
  fc.double({ min: 0, max: 5, noNaN: true }).map((maxBurstSeconds) => ({ kind: 'bursty' as const, maxBurstSeconds })),
  fc
    .record({ warmupMicros: fc.integer({ min: 1, max: 5e6 }), coldFactor: fc.double({ min: 1, max: 10, noNaN: true }) })
    .map(({ warmupMicros, coldFactor }) => ({ kind: 'warmingUp' as const, warmupMicros, coldFactor })),
);
const steps = fc.array(fc.tuple(fc.integer({ min: 0, max: 2_000_000 }), fc.integer({ min: 1, max: 5 })), {
  maxLength: 20,
});

describe('releaseAt', () => {
  test('a reservation still the latest and not yet due is undone exactly; a due one or one followed is kept', () => {
    fc.assert(
      fc.property(
        models,
        fc.double({ min: 0.1, max: 1000, noNaN: true }),
        steps,
        fc.integer({ min: 1, max: 50 }),
        fc.double({ min: 0, max: 1.5, noNaN: true }),
        (model, rate, before, permits, when) => {
          const storage = storageOf(model);
          let now = 0n;
          let state: SmoothState = setRateAt(storage, FRESH_SMOOTH_STATE, rate, now);
          for (const [step, n] of before) {
            now += BigInt(step);
            state = reserveAt(storage, state, n, now).state;
          }
          const reservation = reserveAt(storage, state, permits, now);
          // Release at a moment between now and a bit past the reservation's start.
          const span = Number(reservation.startMicros - now);
          const at = now + BigInt(Math.floor(span * when));
          const released = releaseAt(reservation.state, reservation, at);
          if (at < reservation.startMicros) assert.deepEqual(released, state);
          else assert.equal(released, undefined, 'due: kept');
          const later = reserveAt(storage, reservation.state, 1, at);
          assert.equal(releaseAt(later.state, reservation, at), undefined, 'a later reservation counts on it: kept');
          if (released !== undefined) assert.equal(releaseAt(released, reservation, at), undefined, 'released once');
        },
      ),
      { numRuns: runs(500) },
    );
  });
});
