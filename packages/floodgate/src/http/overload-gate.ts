/**
 * The framework-neutral part of the concurrency middlewares: from options to a
 * {@link ConcurrencyLimiter}, a request's tier, and the answer to a shed request.
 */
import type { AdaptiveLimitOptions } from '../core/adaptive/adaptive-limit.js';
import type { Clock } from '../core/clock.js';
import { FloodgateError, describeValue } from '../core/errors.js';
import { requireObject } from '../core/validate.js';
import { ConcurrencyLimiter, type Admission } from '../overload/concurrency-limiter.js';
import type { Shed, ShedReason } from '../overload/concurrency-permit.js';
import type { CoDel } from '../overload/wait-line.js';
import { ClientIpResolver, type TrustProxyOptions } from './client-ip.js';
import {
  watchEventLoop,
  type DelayMonitor,
  type EventLoopDelayOptions,
  type EventLoopPressure,
} from './event-loop-pressure.js';
import { FIELD, ceilSeconds } from './headers.js';
import { consoleLogger, type Logger } from './logger.js';
import { OptionFunctionError, returnedWrong, threw } from './option-error.js';
import { PROBLEM_CONTENT_TYPE, capacityProblemBody } from './problem.js';
import type { HttpRequest } from './request.js';
import type { HeaderPair } from './verdict.js';

/**
 * HttpConcurrencyOptions configures every concurrency middleware: give `limit` (a fixed number of
 * requests in flight), `adaptive` (a limit learned from latency and drops), or `limiter` (your own
 * {@link ConcurrencyLimiter}, to share one across routes or apps).
 */
export interface HttpConcurrencyOptions<Req = unknown> extends TrustProxyOptions {
  /** A fixed limit: at most this many requests in flight. */
  limit?: number;
  /** An adaptive limit, learned from the requests' latency and drops: its options, or `true` for the defaults. */
  adaptive?: AdaptiveLimitOptions | true;
  /** Your own limiter, instead of `limit`/`adaptive` and the options that shape it; shared by every middleware given it. */
  limiter?: ConcurrencyLimiter;
  /** Priority tiers (default 1); tier 0 is served first and shed last. */
  tiers?: number;
  /** Share of the limit held back from each tier below the top, per step down (default 0.1). */
  reserveRatio?: number;
  /** Most requests waiting for a slot (default 0: shed at once when every slot is taken). */
  maxQueue?: number;
  /** Longest a request waits for a slot, in ms (default 1000). */
  maxWaitMs?: number;
  /** The wait line's order (default `adaptive-lifo`, see `ConcurrencyLimiterOptions`). */
  order?: 'adaptive-lifo' | 'fifo';
  /** CoDel's parameters for `adaptive-lifo`, in ms. */
  codel?: Partial<CoDel>;
  /**
   * tierOf returns a request's tier (0 is the most important), or undefined for the least
   * important; a tier out of range, or a throw, fails the request with an `INVALID_OPTION`
   * `OptionFunctionError` naming `tierOf`.
   */
  tierOf?: (req: HttpRequest<Req>) => number | undefined;
  /**
   * A request header holding the tier as a whole number, instead of `tierOf`; a missing or bad
   * value is the least important tier. Trust it only when your own proxy sets it.
   */
  tierHeader?: string;
  /** The status of a shed request: 503 (default) or 429. */
  statusCode?: 503 | 429;
  /**
   * With `adaptive`: count a request as a drop, backing the limit off, when this process's recent
   * event-loop delay (p99 or mean) is above `maxMs` (read with node's `monitorEventLoopDelay`).
   */
  eventLoopDelay?: EventLoopDelayOptions;
  /** Receives one-time warnings (forwarding headers that `trustProxy` ignores); default console. */
  logger?: Logger;
  /** The limiter's clock, and the event-loop windows' (default the system clock, and a monotonic one). */
  clock?: Clock;
}

/** ShedResponse is the answer to a shed request: status, headers (`Retry-After` among them) and problem+json body. */
export interface ShedResponse {
  readonly statusCode: number;
  readonly headers: readonly HeaderPair[];
  readonly body: string;
}

/**
 * ConcurrencyControl is what every concurrency middleware carries besides itself: its `limiter`
 * (`limiter.snapshot()` for metrics: limit, in flight, queued), and `close()`, which stops the
 * event-loop sampling that `eventLoopDelay` started (the limiter goes on working).
 */
export interface ConcurrencyControl {
  /** The middleware's limiter: the one given as `limiter`, or the one it made. */
  readonly limiter: ConcurrencyLimiter;
  /** close stops the event-loop sampling, if any; the middleware goes on admitting. */
  close(): void;
}

/** The options that shape the limiter a gate makes, refused beside `limiter`. */
const LIMITER_SHAPE = [
  'limit',
  'adaptive',
  'tiers',
  'reserveRatio',
  'maxQueue',
  'maxWaitMs',
  'order',
  'codel',
  'eventLoopDelay',
  'clock',
] as const;

const DETAILS: Readonly<Record<ShedReason, string>> = {
  limit: 'every slot for requests of this priority is taken',
  'queue-full': 'every slot is taken and the line of requests waiting for one is full',
  'queue-timeout': 'no slot came free within the time this request may wait',
  aborted: 'the client left while the request waited for a slot',
};

/**
 * ConcurrencyGate admits requests for the concurrency middlewares: a {@link ConcurrencyLimiter},
 * each request's tier, and the problem+json answer when one is shed. Adapters hold each permit
 * until the response ends and release it once, with `callOutcome` of how it ended.
 *
 * @example
 * const gate = new ConcurrencyGate({ limit: 64, maxQueue: 100, maxWaitMs: 500 });
 * const admission = await gate.admit(undefined, signal);
 * if (!admission.allowed) return gate.refusal(admission); // 503, Retry-After, problem+json
 */
export class ConcurrencyGate<Req = unknown> {
  /** The limiter: the one given as `limiter`, or one made from the options. */
  readonly limiter: ConcurrencyLimiter;
  /** clientIp resolves `req.ip` for the adapters' request views. */
  readonly clientIp: ClientIpResolver;
  /** readsRequest is true when a tier is read from the request: adapters build a request view only then. */
  readonly readsRequest: boolean;
  /** mayWait is false when no request can ever wait (`maxQueue` 0): adapters then pass no signal. */
  readonly mayWait: boolean;
  private readonly tierOf: ((req: HttpRequest<Req>) => number | undefined) | undefined;
  private readonly tierHeader: string | undefined;
  /** statusCode is the status of a shed request: 503, or 429 when the options say so. */
  readonly statusCode: number;
  private readonly bodies: Readonly<Record<ShedReason, string>>;
  private readonly pressure: EventLoopPressure | undefined;

  /**
   * Checks the options (an `INVALID_OPTION` error names the one at fault) and makes the limiter.
   * `monitor` is node's `monitorEventLoopDelay`, which `eventLoopDelay` needs; when given, this
   * starts its one sampling timer (unreferenced), until {@link ConcurrencyGate.close}.
   */
  constructor(options: HttpConcurrencyOptions<Req>, monitor?: DelayMonitor) {
    const o = requireObject<HttpConcurrencyOptions<Req>>(options, 'floodgate concurrency options');
    this.clientIp = new ClientIpResolver(o, o.logger ?? consoleLogger);
    this.tierOf = optionalFunction(o.tierOf, 'tierOf');
    this.tierHeader = checkTierHeader(o.tierHeader, o.tierOf);
    this.readsRequest = this.tierOf !== undefined || this.tierHeader !== undefined;
    this.statusCode = checkStatus(o.statusCode);
    this.bodies = shedBodies(this.statusCode);
    if (o.limiter !== undefined) {
      this.limiter = givenLimiter(o);
      this.mayWait = true;
    } else {
      this.pressure = eventLoopOf(o, monitor);
      this.limiter = madeLimiter(o, this.pressure);
      this.mayWait = o.maxQueue !== undefined && o.maxQueue > 0;
    }
  }

  /**
   * admit returns a permit, a `Shed`, or a promise of either after a wait (`signal` ends it).
   * The tier is `tier` when given (a route's own), else `tierOf(req)` or `tierHeader`'s value,
   * else the least important. A failing `tierOf` throws an `INVALID_OPTION` OptionFunctionError.
   */
  admit(
    req: HttpRequest<Req> | undefined,
    signal: AbortSignal | undefined,
    tier?: number,
  ): Admission | Promise<Admission> {
    const chosen = tier ?? (req === undefined ? undefined : this.tierFor(req));
    try {
      return this.limiter.acquire(chosen === undefined ? { signal } : { tier: chosen, signal });
    } catch (err) {
      if (!(err instanceof FloodgateError && err.option === 'tier') || chosen === undefined) throw err;
      // A client's header names no tier the limiter has: it is the least important.
      if (tier === undefined && this.tierOf === undefined) return this.limiter.acquire({ signal });
      const option = tier === undefined ? 'tierOf' : 'tier';
      throw new OptionFunctionError(
        'INVALID_OPTION',
        `the ${option} option gave a tier the limiter lacks: ${err.message}`,
        { option, route: req?.route },
      );
    }
  }

  /** refusal returns the answer to a shed request: `statusCode` (503), `Retry-After` in whole seconds (at least 1), problem+json. */
  refusal(shed: Shed): ShedResponse {
    const seconds = Math.max(1, ceilSeconds(shed.retryAfterMs));
    const headers: HeaderPair[] = [
      [FIELD.retryAfter, String(seconds)],
      [FIELD.cacheControl, 'no-store'],
      [FIELD.contentType, PROBLEM_CONTENT_TYPE],
    ];
    return { statusCode: this.statusCode, headers, body: this.bodies[shed.reason] };
  }

  /** close stops sampling the event loop, when `eventLoopDelay` started it; the limiter goes on. */
  close(): void {
    this.pressure?.close();
  }

  private tierFor(req: HttpRequest<Req>): number | undefined {
    if (this.tierOf !== undefined) {
      let tier: unknown;
      try {
        tier = this.tierOf(req);
      } catch (err) {
        throw threw('tierOf', req.route, err);
      }
      if (tier === undefined || (typeof tier === 'number' && Number.isSafeInteger(tier) && tier >= 0)) return tier;
      throw returnedWrong('tierOf', req.route, 'a whole-number tier from 0, or undefined', tier);
    }
    if (this.tierHeader === undefined) return undefined;
    const value = req.header(this.tierHeader)?.trim();
    return value !== undefined && /^\d{1,3}$/.test(value) ? Number(value) : undefined;
  }
}

/** The `limiter` option, alone: the options that shape a limiter belong to the one given. */
function givenLimiter<Req>(o: HttpConcurrencyOptions<Req>): ConcurrencyLimiter {
  if (!(o.limiter instanceof ConcurrencyLimiter)) throw invalid('limiter', 'a ConcurrencyLimiter', o.limiter);
  const clash = LIMITER_SHAPE.find((name) => o[name] !== undefined);
  if (clash !== undefined) {
    throw new FloodgateError(
      'INVALID_OPTION',
      `${clash} shapes the limiter this middleware would make; with limiter given, set ${clash} on that ConcurrencyLimiter instead`,
      clash,
    );
  }
  return o.limiter;
}

/** The event-loop monitor for `eventLoopDelay`, which feeds an adaptive limit only. */
function eventLoopOf<Req>(
  o: HttpConcurrencyOptions<Req>,
  monitor: DelayMonitor | undefined,
): EventLoopPressure | undefined {
  if (o.eventLoopDelay === undefined) return undefined;
  if (o.adaptive === undefined) {
    throw new FloodgateError(
      'INVALID_OPTION',
      'eventLoopDelay backs an adaptive limit off; a fixed limit never moves: give adaptive, or leave eventLoopDelay out',
      'eventLoopDelay',
    );
  }
  if (monitor === undefined) {
    throw new FloodgateError(
      'INVALID_OPTION',
      "eventLoopDelay needs node:perf_hooks's monitorEventLoopDelay, which this runtime lacks: leave it out, or give limiter with a pressure function of your own",
      'eventLoopDelay',
    );
  }
  return watchEventLoop(monitor, o.eventLoopDelay, 'eventLoopDelay', o.clock);
}

/** The limiter of the options, its errors naming the options as given here (`maxQueue`, not `ConcurrencyLimiter.maxQueue`). */
function madeLimiter<Req>(o: HttpConcurrencyOptions<Req>, pressure: EventLoopPressure | undefined): ConcurrencyLimiter {
  if ((o.limit === undefined) === (o.adaptive === undefined)) {
    const what =
      o.limit === undefined
        ? 'give limit (a fixed number of requests in flight), adaptive (options, or true) or limiter (a ConcurrencyLimiter)'
        : 'give limit or adaptive, not both';
    throw new FloodgateError('INVALID_OPTION', what, 'limit');
  }
  const { limit, adaptive, tiers, reserveRatio, maxQueue, maxWaitMs, order, codel, clock } = o;
  try {
    return new ConcurrencyLimiter({
      limit,
      adaptive,
      tiers,
      reserveRatio,
      maxQueue,
      maxWaitMs,
      order,
      codel,
      clock,
      pressure: pressure?.pressed,
    });
  } catch (err) {
    pressure?.close();
    if (!(err instanceof FloodgateError) || !err.option?.startsWith('ConcurrencyLimiter.')) throw err;
    throw new FloodgateError(
      err.code,
      err.message.replaceAll('ConcurrencyLimiter.', ''),
      err.option.slice('ConcurrencyLimiter.'.length),
    );
  }
}

/** Each shed reason's problem+json body, made once: the draft's `temporary-reduced-capacity`, with the status sent. */
function shedBodies(statusCode: number): Record<ShedReason, string> {
  const body = (reason: ShedReason): string => capacityProblemBody(statusCode, DETAILS[reason]);
  return {
    limit: body('limit'),
    'queue-full': body('queue-full'),
    'queue-timeout': body('queue-timeout'),
    aborted: body('aborted'),
  };
}

function checkStatus(value: unknown): number {
  if (value === undefined) return 503;
  if (value === 503 || value === 429) return value;
  throw invalid('statusCode', '503 or 429', value);
}

function checkTierHeader(value: unknown, tierOf: unknown): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !/^[A-Za-z0-9-]+$/.test(value)) throw invalid('tierHeader', 'a header name', value);
  if (tierOf !== undefined)
    throw new FloodgateError('INVALID_OPTION', 'give tierOf or tierHeader, not both', 'tierHeader');
  return value.toLowerCase();
}

function optionalFunction<F>(value: F | undefined, option: string): F | undefined {
  if (value !== undefined && typeof value !== 'function') throw invalid(option, 'a function', value);
  return value;
}

function invalid(option: string, expected: string, got: unknown): FloodgateError {
  return new FloodgateError('INVALID_OPTION', `${option} must be ${expected}, got ${describeValue(got)}`, option);
}
