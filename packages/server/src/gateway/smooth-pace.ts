/**
 * The pace of a smooth rule: Guava's smooth limiter that a request reserves its turn on and then
 * waits for. On the memory store it lives in this process ({@link LocalSmoothPace}); on Redis it
 * is the library's RedisSmoothLimiter, one per rule, shared by every gateway process on the store.
 */
import {
  FRESH_SMOOTH_STATE,
  FloodgateError,
  monotonicClock,
  releaseSmoothAt,
  setSmoothRateAt,
  smoothStorageOf,
  systemTimers,
  tryReserveSmoothAt,
  type Clock,
  type PermitStorage,
  type SmoothModel,
  type SmoothReservation,
  type SmoothState,
  type TimerHandle,
  type Timers,
} from 'floodgate';
import type { SmoothPolicyConfig } from '../config/smooth-schema.js';
import type { FleetSmooth } from '../store/store.js';

/**
 * SmoothPace is what a smooth rule waits on: the two calls of the library's RedisSmoothLimiter
 * the gateway uses, which {@link LocalSmoothPace} also answers.
 */
export interface SmoothPace {
  /**
   * acquire resolves to the seconds waited once `permits` reserved on the pace are due; it reserves
   * only a turn within `maxWaitMs` and rejects with `WAIT_TIMEOUT` otherwise, and with `ABORTED`
   * when `signal` fires first (the reservation released when it is still the latest and not due).
   */
  acquire(permits: number, options: { maxWaitMs: number; signal?: AbortSignal }): Promise<number>;
  /** tryAcquire resolves to true once `permits` are due when they are free within `timeoutMs`, and to false at once otherwise. */
  tryAcquire(permits: number, timeoutMs: number): Promise<boolean>;
  /** waiting returns how many of this process's requests wait for their turn. */
  readonly waiting: number;
}

/** How long a fleet limiter's Redis key outlives its next-free moment unused: a day, after which it starts afresh. */
const FLEET_IDLE_TTL_MS = 86_400_000;

/**
 * paceOf returns the pace of a smooth rule `name` (route/rule) with `policy`: the fleet's on Redis
 * when `fleet` is given, else one in this process. The fleet limiter's Redis name carries the
 * policy's numbers, so a changed policy starts a limiter of its own (Redis refuses another model
 * under an existing name, and keeps an existing limiter's rate).
 */
export function paceOf(name: string, policy: SmoothPolicyConfig, fleet: FleetSmooth | undefined): SmoothPace {
  const permitsPerSecond = policy.permitsPerSecond;
  if (fleet === undefined) return new LocalSmoothPace(modelOf(policy), permitsPerSecond);
  const common = { store: fleet.store, permitsPerSecond, idleTtlMs: FLEET_IDLE_TTL_MS };
  if (policy.algorithm === 'smoothBursty') {
    const maxBurstSeconds = policy.maxBurstSeconds ?? 1;
    const redisName = `gateway:${name}:bursty:${permitsPerSecond}:${maxBurstSeconds}`;
    return fleet.limiter.bursty({ ...common, name: redisName, maxBurstSeconds });
  }
  const coldFactor = policy.coldFactor ?? 3;
  const redisName = `gateway:${name}:warmingUp:${permitsPerSecond}:${policy.warmupMs}:${coldFactor}`;
  return fleet.limiter.warmingUp({ ...common, name: redisName, warmupMs: policy.warmupMs, coldFactor });
}

function modelOf(policy: SmoothPolicyConfig): SmoothModel {
  return policy.algorithm === 'smoothBursty'
    ? { kind: 'bursty', maxBurstSeconds: policy.maxBurstSeconds ?? 1 }
    : { kind: 'warmingUp', warmupMicros: Math.trunc(policy.warmupMs * 1000), coldFactor: policy.coldFactor ?? 3 };
}

interface Waiter {
  readonly reservation: SmoothReservation;
  /** When its turn comes, on the pace's clock. */
  readonly dueMs: number;
  readonly settle: (error: Error | undefined) => void;
  done: boolean;
}

/**
 * LocalSmoothPace is a smooth rule's pace in one process: Guava's state, reserved with the
 * library's own rules (`tryReserveSmoothAt`, `releaseSmoothAt`), and one timer for the line of
 * requests waiting their turns. Turns come in the order they were reserved, since each starts at
 * the next-free moment the previous one left.
 */
export class LocalSmoothPace implements SmoothPace {
  private state: SmoothState;
  private readonly storage: PermitStorage;
  private readonly line: Waiter[] = [];
  private head = 0;
  private live = 0;
  private timer: TimerHandle | undefined;

  /** Creates a pace of `model` at `permitsPerSecond`, reading `clock` and setting `timers` (default: real ones). */
  constructor(
    model: SmoothModel,
    permitsPerSecond: number,
    private readonly clock: Clock = monotonicClock,
    private readonly timers: Timers = systemTimers,
  ) {
    this.storage = smoothStorageOf(model);
    this.state = setSmoothRateAt(this.storage, FRESH_SMOOTH_STATE, permitsPerSecond, this.nowMicros());
  }

  get waiting(): number {
    return this.live;
  }

  acquire(permits: number, options: { maxWaitMs: number; signal?: AbortSignal }): Promise<number> {
    const { maxWaitMs, signal } = options;
    if (signal?.aborted === true) return Promise.reject(abortedError());
    const now = this.nowMicros();
    const reservation = tryReserveSmoothAt(
      this.storage,
      this.state,
      permits,
      BigInt(Math.floor(maxWaitMs * 1000)),
      now,
    );
    if (reservation === undefined)
      return Promise.reject(
        new FloodgateError(
          'WAIT_TIMEOUT',
          `the turn is more than maxWaitMs (${maxWaitMs} ms) away; raise maxWaitMs, or lower the load`,
          'maxWaitMs',
        ),
      );
    this.state = reservation.state;
    const waitSeconds = Number(reservation.waitMicros) / 1e6;
    if (reservation.waitMicros === 0n) return Promise.resolve(0);
    return new Promise<number>((resolve, reject) => {
      const onAbort = (): void => this.leave(waiter);
      const waiter: Waiter = {
        reservation,
        dueMs: Number(reservation.startMicros) / 1000,
        done: false,
        settle: (error) => {
          signal?.removeEventListener('abort', onAbort);
          if (error === undefined) resolve(waitSeconds);
          else reject(error);
        },
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.line.push(waiter);
      this.live++;
      if (this.live === 1) this.arm();
    });
  }

  async tryAcquire(permits: number, timeoutMs: number): Promise<boolean> {
    try {
      await this.acquire(permits, { maxWaitMs: Math.max(0, timeoutMs) });
      return true;
    } catch (error) {
      if (error instanceof FloodgateError && error.code === 'WAIT_TIMEOUT') return false;
      throw error;
    }
  }

  /** A waiter whose client left: out of the line, its turn given back when it is the latest and not yet due. */
  private leave(waiter: Waiter): void {
    if (waiter.done) return;
    waiter.done = true;
    this.live--;
    const released = releaseSmoothAt(this.state, waiter.reservation, this.nowMicros());
    if (released !== undefined) this.state = released;
    waiter.settle(abortedError());
  }

  /** Lets every waiter whose turn has come go, then sets the timer for the next one. */
  private readonly ring = (): void => {
    this.timer = undefined;
    const nowMs = this.clock.now();
    while (this.head < this.line.length) {
      const waiter = this.line[this.head]!;
      if (!waiter.done && waiter.dueMs > nowMs) break;
      this.head++;
      if (waiter.done) continue;
      waiter.done = true;
      this.live--;
      waiter.settle(undefined);
    }
    if (this.head > 1024 && this.head * 2 > this.line.length) {
      this.line.splice(0, this.head);
      this.head = 0;
    }
    this.arm();
  };

  private arm(): void {
    if (this.timer !== undefined) this.timers.clearTimer(this.timer);
    this.timer = undefined;
    while (this.head < this.line.length && this.line[this.head]!.done) this.head++;
    if (this.head === this.line.length) {
      this.line.length = 0;
      this.head = 0;
      return;
    }
    this.timer = this.timers.setTimer(this.ring, this.line[this.head]!.dueMs - this.clock.now());
  }

  private nowMicros(): bigint {
    return BigInt(Math.floor(this.clock.now() * 1000));
  }
}

function abortedError(): FloodgateError {
  return new FloodgateError('ABORTED', 'the client left while waiting its turn', 'signal');
}
