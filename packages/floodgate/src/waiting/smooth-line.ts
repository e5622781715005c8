import { FloodgateError } from '../core/errors.js';
import { notify } from '../core/events.js';
import { clockMicros } from '../core/smooth/smooth-rate-limiter.js';
import { replyError } from '../stores/redis/runner.js';
import { SMOOTH_SCRIPT, smoothAnswersOf, type SmoothAnswer } from '../stores/redis/scripts/smooth.js';
import { AbortHooks } from './abort-hooks.js';
import { Alarm } from './alarm.js';
import { DeadlineHeap } from './deadline-heap.js';
import { aborted, asError, waitTimeout } from './errors.js';
import type { SmoothSettings } from './redis-smooth-options.js';
import { SmoothFailure } from './smooth-failure.js';
import { pushOpArgs, waits, WakeLine, type Booking, type SmoothCall, type SmoothCallKind } from './smooth-call.js';

/** Most operations sent in one script. */
const MAX_BATCH = 128;
const MICROS_PER_SECOND = 1e6;

/** SmoothRequest is a call as {@link SmoothLine.submit} takes it, its arguments checked. */
export interface SmoothRequest {
  readonly permits: number;
  /** The longest wait it may reserve, in whole µs; undefined: any. */
  readonly timeout: bigint | undefined;
  /** The rate of a setRate (NaN otherwise). */
  readonly rate: number;
  /** When the caller gives up, on the local clock (Infinity: never). */
  readonly deadlineMs: number;
  readonly signal?: AbortSignal | undefined;
  readonly release?: Booking;
}

/**
 * SmoothLine is the machinery behind a {@link RedisSmoothLimiter}: it sends the calls of each turn
 * of the event loop to Redis as one script, answers them from the replies (or from the failure
 * policy), lines up the callers that must wait in this process, first in, first out, with one
 * alarm, and gives up on callers past their deadline or aborted, releasing what they reserved when
 * that is safe.
 *
 * A script cut off at the store's deadline may still run: its calls wait for the late answer (up
 * to `lateAnswerMs`) and take the reservations it made, so no caller goes before its turn on the
 * fleet's schedule. Only when no answer comes in that time does the failure policy decide them.
 */
export class SmoothLine {
  private readonly line = new WakeLine();
  private readonly live = new Map<number, SmoothCall>();
  private readonly deadlines = new DeadlineHeap();
  /** When each call whose script was cut off stops waiting for the late answer. */
  private readonly doubts = new DeadlineHeap();
  private readonly hooks: AbortHooks;
  private readonly alarm: Alarm;
  private readonly failure: SmoothFailure;
  private pending: SmoothCall[] = [];
  private flushQueued = false;
  private seq = 0;
  /** The fleet's rate as this process last heard it (for the local fallback). */
  private knownRate: number;

  /** Creates the line for a limiter with settings `s`, named `what` in errors. */
  constructor(
    private readonly s: SmoothSettings,
    private readonly what: string,
  ) {
    this.knownRate = s.permitsPerSecond;
    this.alarm = new Alarm(s.clock, s.timers, () => this.ring());
    this.hooks = new AbortHooks((seq, signal) => this.giveUp(seq, aborted(`${this.what}.acquire`, signal)));
    this.failure = new SmoothFailure(s, () => this.knownRate);
  }

  /** waiting returns how many callers of this process sleep until their reservations are due. */
  get waiting(): number {
    return this.line.live;
  }

  /** submit queues a call for the next script and resolves or rejects as Redis (or the failure policy) answers it. */
  submit<T>(kind: SmoothCallKind, request: SmoothRequest): Promise<T> {
    const promise = this.enqueue<T>(kind, request);
    const seq = this.seq;
    if (request.deadlineMs < Infinity) {
      this.deadlines.push(request.deadlineMs, seq);
      this.rearm();
    }
    if (request.signal !== undefined) this.hooks.add(seq, request.signal);
    return promise;
  }

  private enqueue<T>(kind: SmoothCallKind, o: SmoothRequest): Promise<T> {
    let resolve!: (value: unknown) => void;
    let reject!: (error: Error) => void;
    const promise = new Promise<T>((res, rej) => {
      resolve = res as (value: unknown) => void;
      reject = rej;
    });
    const call: SmoothCall = {
      kind,
      seq: ++this.seq,
      permits: o.permits,
      timeoutMicros: o.timeout,
      rate: o.rate,
      release: o.release,
      deadlineMs: o.deadlineMs,
      resolve,
      reject,
      settled: false,
      booking: undefined,
      waitMicros: 0,
      wakeAtMs: 0,
      inLine: false,
      doubt: undefined,
    };
    if (kind !== 'release') this.live.set(call.seq, call);
    this.pending.push(call);
    if (!this.flushQueued) {
      this.flushQueued = true;
      // Once per turn of the event loop, as the store's batches: calls made in several callbacks
      // of one turn (replies parsed together, timers due together) share one script.
      setImmediate(this.flush);
    }
    return promise;
  }

  /** Sends the calls of this turn of the event loop, in order, as scripts of at most {@link MAX_BATCH} operations. */
  private readonly flush = (): void => {
    this.flushQueued = false;
    const calls = this.pending;
    this.pending = [];
    for (let i = 0; i < calls.length; i += MAX_BATCH) this.send(calls.slice(i, i + MAX_BATCH));
  };

  private send(batch: SmoothCall[]): void {
    const s = this.s;
    const time = s.testTime ? String(clockMicros(s.clock)) : '';
    const args = [time, ...s.modelArgs, String(s.permitsPerSecond), s.ttlArg];
    for (const call of batch) pushOpArgs(args, call);
    s.runner
      .run(SMOOTH_SCRIPT, [s.key], args, 'smooth', (reply) => this.lateReply(batch, reply))
      .then(
        (reply) => this.answered(batch, reply),
        (error: unknown) => this.failed(batch, asError(error)),
      );
  }

  private answered(batch: readonly SmoothCall[], reply: unknown): void {
    const answers = smoothAnswersOf(reply, batch.length);
    if (answers === undefined) {
      const error = replyError('the smooth script', 'its answers, five fields per operation', reply);
      for (const call of batch) this.settle(call, error);
      return;
    }
    this.failure.recovered();
    const nowMs = this.s.clock.now();
    batch.forEach((call, i) => this.answer(call, answers[i]!, nowMs));
    this.rearm();
  }

  private answer(call: SmoothCall, a: SmoothAnswer, nowMs: number): void {
    if (call.kind === 'release') return;
    if (call.kind === 'setRate' || call.kind === 'getRate') {
      this.knownRate = MICROS_PER_SECOND / Number(a.text);
      return this.settle(call, undefined, call.kind === 'getRate' ? this.knownRate : undefined);
    }
    if (!a.done) return this.refused(call);
    if (call.settled) return this.releaseQuietly({ version: a.version });
    if (waits(call)) call.booking = { version: a.version };
    this.granted(call, a.waitMicros, nowMs);
  }

  /** A reservation was made (by Redis or the failure policy): answer it, or line the caller up until it is due. */
  private granted(call: SmoothCall, waitMicros: number, nowMs: number): void {
    call.waitMicros = waitMicros;
    if (!waits(call)) return this.settle(call, undefined, waitMicros / 1000);
    const wakeAtMs = nowMs + waitMicros / 1000;
    if (wakeAtMs > call.deadlineMs) return this.giveUp(call.seq, waitTimeout(`${this.what}.acquire`, undefined));
    if (wakeAtMs <= nowMs && this.line.empty) return this.settle(call, undefined, resultOf(call));
    this.line.push(call, wakeAtMs);
    this.depthChanged();
  }

  private refused(call: SmoothCall): void {
    if (call.kind === 'acquire') this.settle(call, waitTimeout(`${this.what}.acquire`, undefined));
    else this.settle(call, undefined, false);
  }

  private failed(batch: readonly SmoothCall[], error: Error): void {
    const nowMs = this.s.clock.now();
    const mayStillRun = isCutOff(error) && this.s.lateAnswerMs > 0;
    for (const call of batch) {
      if (call.settled || call.kind === 'release') continue;
      if (call.kind === 'setRate' || call.kind === 'getRate' || refusedByScript(error)) {
        this.failure.rejected(error);
        this.settle(call, error);
      } else if (mayStillRun) {
        call.doubt = error;
        this.doubts.push(nowMs + this.s.lateAnswerMs, call.seq);
      } else {
        this.fallBack(call, error, nowMs);
      }
    }
    this.rearm();
  }

  /** The failure policy answers `call`, whose script failed with `error`. */
  private fallBack(call: SmoothCall, error: Error, nowMs: number): void {
    try {
      const waitMicros = this.failure.waitMicrosFor(call, error);
      if (waitMicros === false) this.refused(call);
      else this.granted(call, waitMicros, nowMs);
    } catch (thrown) {
      this.settle(call, asError(thrown));
    }
  }

  /**
   * A script cut off at its deadline ran after all. Calls still waiting for it take its answers
   * (their reservations are on the fleet's schedule); the reservations it made for callers answered
   * meanwhile, or gone, are released when safe.
   */
  private lateReply(batch: readonly SmoothCall[], reply: unknown): void {
    const answers = smoothAnswersOf(reply, batch.length);
    if (answers === undefined) return;
    const nowMs = this.s.clock.now();
    batch.forEach((call, i) => {
      const a = answers[i]!;
      if (call.doubt !== undefined) {
        call.doubt = undefined;
        this.answer(call, a, nowMs);
      } else if (a.done && call.kind !== 'release' && call.kind !== 'setRate' && call.kind !== 'getRate') {
        this.releaseQuietly({ version: a.version });
      }
    });
    this.rearm();
  }

  private releaseQuietly(booking: Booking): void {
    this.enqueue('release', {
      permits: 1,
      timeout: undefined,
      rate: NaN,
      deadlineMs: Infinity,
      release: booking,
    }).catch(() => undefined);
  }

  /** The caller of `seq` gives up with `error`; a reservation it holds is released when that is safe. */
  private giveUp(seq: number, error: Error): void {
    const call = this.live.get(seq);
    if (call === undefined || call.settled) return;
    this.settle(call, error);
    if (call.booking !== undefined) this.releaseQuietly(call.booking);
    this.rearm();
  }

  /** Lets due callers go and gives up on callers past their deadlines; runs when the alarm rings. */
  private ring(): void {
    const nowMs = this.s.clock.now();
    for (const call of this.line.takeDue(nowMs)) this.settle(call, undefined, resultOf(call));
    while (this.deadlines.minTimeMs() <= nowMs) {
      this.giveUp(this.deadlines.pop(), waitTimeout(`${this.what}.acquire`, undefined));
    }
    const undecided: SmoothCall[] = [];
    while (this.doubts.minTimeMs() <= nowMs) {
      const call = this.live.get(this.doubts.pop());
      if (call?.doubt !== undefined) undecided.push(call);
    }
    // In the order they were made (the heap keeps no order among equal times), as a script would have.
    for (const call of undecided.sort((a, b) => a.seq - b.seq)) {
      const error = call.doubt!;
      call.doubt = undefined;
      this.fallBack(call, error, nowMs);
    }
    this.rearm();
  }

  private rearm(): void {
    while (this.deadlines.size > 0 && !this.live.has(this.deadlines.minSeq())) this.deadlines.pop();
    while (this.doubts.size > 0 && this.live.get(this.doubts.minSeq())?.doubt === undefined) this.doubts.pop();
    this.alarm.setAt(Math.min(this.line.nextWakeAtMs(), this.deadlines.minTimeMs(), this.doubts.minTimeMs()));
  }

  private settle(call: SmoothCall, error: Error | undefined, value?: unknown): void {
    if (call.settled) return;
    call.settled = true;
    this.live.delete(call.seq);
    this.hooks.remove(call.seq);
    if (call.inLine) {
      this.line.left(call);
      this.depthChanged();
    }
    if (error !== undefined) call.reject(error);
    else call.resolve(value);
  }

  /** Tells the store's observer how many callers of this process now wait in the line (`queue`). */
  private depthChanged(): void {
    const observer = this.s.observer;
    if (observer?.queue === undefined) return;
    notify(observer, 'queue', { queue: this.s.name, key: undefined, depth: this.line.live, atMs: this.s.clock.now() });
  }
}

/**
 * refusedByScript returns whether `error` is the script's own refusal (a state made under another
 * model or parameters, a bad argument): a mistake to fix, which no failure policy should hide.
 */
function refusedByScript(error: Error): boolean {
  if (!(error instanceof FloodgateError)) return true;
  const cause = error.cause;
  return cause instanceof Error && cause.message.startsWith('FLOODGATE');
}

/** isCutOff returns whether `error` is a script cut off at the store's deadline: Redis may still run it and answer. */
function isCutOff(error: Error): boolean {
  return error instanceof FloodgateError && error.code === 'STORE_TIMEOUT';
}

/** What a waiting call resolves to once due: acquire the seconds its reservation waited, tryAcquire true. */
function resultOf(call: SmoothCall): number | boolean {
  return call.kind === 'acquire' ? call.waitMicros / MICROS_PER_SECOND : true;
}
