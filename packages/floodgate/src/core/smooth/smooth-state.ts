import { longFromDouble, saturatedAdd, wrappingAdd, wrappingSubtract } from './java-long.js';
import type { PermitStorage, SmoothState } from './permit-storage.js';

/** FRESH_SMOOTH_STATE is a limiter before its first rate: what Guava's constructor leaves, all zeros. */
export const FRESH_SMOOTH_STATE: SmoothState = Object.freeze({
  storedPermits: 0,
  maxPermits: 0,
  stableIntervalMicros: 0,
  nextFreeMicros: 0n,
});

/** SmoothReservation is what one reservation did: the state it left, where it starts, and the wait from `now`. */
export interface SmoothReservation {
  /** The state after the reservation. */
  readonly state: SmoothState;
  /** The state just before it, brought up to `now`: what a release restores. */
  readonly before: SmoothState;
  /** The moment the reservation may be used, in µs: the next-free moment as it was before it. */
  readonly startMicros: bigint;
  /** How long the caller waits from `now`, in whole µs, at least 0. */
  readonly waitMicros: bigint;
}

const MICROS_PER_SECOND = 1e6;

/**
 * resyncAt returns `state` brought up to `nowMicros`: when now is past the next-free moment, the
 * idle time since it stored permits (capped at the maximum) and the moment moves to now. It never
 * moves back, so a clock stepping back creates no permits.
 */
export function resyncAt(storage: PermitStorage, state: SmoothState, nowMicros: bigint): SmoothState {
  if (nowMicros <= state.nextFreeMicros) return state;
  const idleMicros = Number(wrappingSubtract(nowMicros, state.nextFreeMicros));
  const earned = idleMicros / storage.coolDownIntervalMicros(state);
  return {
    ...state,
    storedPermits: Math.min(state.maxPermits, state.storedPermits + earned),
    nextFreeMicros: nowMicros,
  };
}

/**
 * setRateAt returns `state` at a new rate from `nowMicros`: brought up to now, then with the new
 * interval and maximum and the stored permits rescaled to it. On {@link FRESH_SMOOTH_STATE} it is
 * Guava's `create`: a bursty limiter starts empty, a warming-up one full, both free from now.
 */
export function setRateAt(
  storage: PermitStorage,
  state: SmoothState,
  permitsPerSecond: number,
  nowMicros: bigint,
): SmoothState {
  const synced = resyncAt(storage, state, nowMicros);
  const stableIntervalMicros = MICROS_PER_SECOND / permitsPerSecond;
  const maxPermits = storage.maxPermitsAt(permitsPerSecond, stableIntervalMicros);
  const storedPermits = storage.carriedPermits(synced.storedPermits, synced.maxPermits, maxPermits);
  return { storedPermits, maxPermits, stableIntervalMicros, nextFreeMicros: synced.nextFreeMicros };
}

/**
 * reserveAt reserves `permits` at `nowMicros`. The caller waits for the moment that was free
 * before this request; the request's own cost (stored permits at the model's price, the rest at
 * the stable interval) pushes the moment out for the next one, saturating at the long range.
 */
export function reserveAt(
  storage: PermitStorage,
  state: SmoothState,
  permits: number,
  nowMicros: bigint,
): SmoothReservation {
  const synced = resyncAt(storage, state, nowMicros);
  const startMicros = synced.nextFreeMicros;
  const storedSpent = Math.min(permits, synced.storedPermits);
  const costMicros = wrappingAdd(
    storage.storedPermitsWaitMicros(synced, storedSpent),
    longFromDouble((permits - storedSpent) * synced.stableIntervalMicros),
  );
  const next: SmoothState = {
    ...synced,
    storedPermits: synced.storedPermits - storedSpent,
    nextFreeMicros: saturatedAdd(startMicros, costMicros),
  };
  const waitMicros = wrappingSubtract(startMicros, nowMicros);
  return { state: next, before: synced, startMicros, waitMicros: waitMicros > 0n ? waitMicros : 0n };
}

/**
 * tryReserveAt reserves as `reserveAt` (a reservation that always succeeds) when the wait would be at most `timeoutMicros` (a
 * Java long, at least 0), and returns undefined, changing nothing, otherwise. Like Guava it judges
 * by the next-free moment as it stands, before bringing the state up to now.
 */
export function tryReserveAt(
  storage: PermitStorage,
  state: SmoothState,
  permits: number,
  timeoutMicros: bigint,
  nowMicros: bigint,
): SmoothReservation | undefined {
  if (wrappingSubtract(state.nextFreeMicros, timeoutMicros) > nowMicros) return undefined;
  return reserveAt(storage, state, permits, nowMicros);
}

/**
 * releaseAt returns the state as if `reservation` had never been made, when that is safe, or
 * undefined. It is safe when the reservation is still the latest (`state` is the one it left: no
 * later reservation counted on its place, no rate changed since) and not yet due (`nowMicros`
 * before its start): the state goes back to what it was just before the reservation (its stored
 * permits back, the next-free moment at its start), which is what a limiter that never saw it
 * would hold now, since no idle time has passed the start. Once due, the caller may already be
 * using its permits, so nothing is given back. The answer is a new state, so a release is itself a
 * change: an earlier reservation is not released after it (the Redis script, which tells states
 * apart by a version, cannot tell that the earlier one has become the latest again).
 */
export function releaseAt(
  state: SmoothState,
  reservation: SmoothReservation,
  nowMicros: bigint,
): SmoothState | undefined {
  if (state !== reservation.state || nowMicros >= reservation.startMicros) return undefined;
  return { ...reservation.before };
}
