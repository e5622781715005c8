/**
 * The options of every HTTP adapter, and their checking: each mistake is a typed error that names
 * the option and says how to fix it.
 */
import { systemClock, type Clock } from '../core/clock.js';
import { FloodgateError, describeValue } from '../core/errors.js';
import type { Observer } from '../core/events.js';
import { requireObject } from '../core/validate.js';
import { Limiter } from '../limiter.js';
import type { TrustProxyOptions } from './client-ip.js';
import type { StoreErrorPolicy } from './failure-report.js';
import { POLICY_NAME, policyItem, serviceHead, type LegacyReset, type QuotaUnit } from './headers.js';
import { byIp, type Identity } from './identity.js';
import { parseIpRange, type IpRange } from './ip.js';
import { DEFAULT_MAX_KEY_LENGTH, MIN_MAX_KEY_LENGTH, MIN_PARTITION_SECRET_BYTES } from './keys.js';
import { consoleLogger, type Logger } from './logger.js';
import { withPreflightExempt } from './preflight.js';
import type { HttpRequest, Outcome } from './request.js';
import { refusalOf, type RefusalResponse } from './refusal.js';
import type { RateLimitInfo } from './rate-limit-info.js';

/** LimiterChoice is a limiter, or a function choosing one per request (undefined: not limited). */
export type LimiterChoice<Req> = Limiter | ((req: HttpRequest<Req>) => Limiter | undefined);

/** Dimension is one policy a request is held to, such as per IP, per user or per route. */
export interface Dimension<Req = unknown> {
  /** The policy's name in headers and problem bodies: 1-64 of `A-Z a-z 0-9 _ . -`, unique. */
  name: string;
  /** The limiter, or a function choosing one per request (a per-request limit, e.g. by plan). */
  limiter: LimiterChoice<Req>;
  /** Who the request counts against (default {@link byIp}); no identity: the dimension is skipped. */
  key?: Identity<Req>;
  /** The draft's quota unit for this policy (default `requests`). */
  quotaUnit?: QuotaUnit;
}

export type { StoreErrorPolicy } from './failure-report.js';

/**
 * HttpLimitOptions configures every adapter. Give either `limiter` (one policy, named `name`,
 * keyed by `key`) or `dimensions` (several, all of which must admit a request).
 */
export interface HttpLimitOptions<Req = unknown> extends TrustProxyOptions {
  /** Shorthand for one dimension: its limiter. */
  limiter?: LimiterChoice<Req>;
  /** Shorthand for one dimension: its identity (default {@link byIp}). */
  key?: Identity<Req>;
  /** Shorthand for one dimension: its policy name (default `default`). */
  name?: string;
  /** Several dimensions, decided together: a request is charged to all or to none. */
  dimensions?: readonly Dimension<Req>[];
  /** The request's cost (default 1): a finite number from 0; above a policy's limit it is refused. */
  cost?: (req: HttpRequest<Req>) => number;
  /** Requests for which this returns true pass untouched: no charge, no headers. */
  skip?: (req: HttpRequest<Req>) => boolean;
  /**
   * Pass CORS preflights (`OPTIONS` with `Origin` and `Access-Control-Request-Method`) untouched,
   * as `skip` would (default false: they are limited and charged like any request, as are HEAD
   * requests). Browsers send a preflight before each non-simple cross-origin request.
   */
  exemptPreflight?: boolean;
  /** Client addresses and CIDR ranges that are never limited (matched against `req.ip`). */
  allowList?: readonly string[];
  /** After an admitted request ends, true gives its cost back, e.g. `(o) => o.statusCode < 400`. */
  refundWhen?: (outcome: Outcome, req: HttpRequest<Req>) => boolean;
  /**
   * How a store error that reaches the gate is answered (default `fail-open`). A store's own
   * failure policy comes first: a `RedisStore`'s `onError` (or a limiter's) decides a failed call,
   * and its decision says so in `reason`, which alone drives the response (`fail-open` admits and
   * marks the response degraded, `fail-closed` answers 503 `temporary-reduced-capacity` with
   * `Retry-After`, `fallback` is decided by the local share). Only an error the store lets through
   * (its `onError` is `throw`, or a custom store rejects) reaches this option: `fail-open` admits
   * and marks the response, `fail-closed` answers 503 and gives back what other dimensions took,
   * `throw` hands the error to the framework (its error handler answers). Each outage is logged
   * once and each such error is passed to `observer.storeError`.
   */
  onStoreError?: StoreErrorPolicy;
  /**
   * Called when a request is refused (429, or 503 when the store is full or failing closed), with
   * the request and its decisions, before the refusal is answered: for logging, metrics or
   * banning (express-rate-limit's `handler`/`onLimitReached`). What it throws is logged once and
   * does not change the answer.
   */
  onLimit?: (req: HttpRequest<Req>, info: RateLimitInfo) => void;
  /**
   * The body of a request refused by a limit, instead of the problem+json one: a string is sent as
   * `text/plain`, an object as JSON. The rate-limit headers and `Retry-After` are sent as before.
   */
  message?: string | object;
  /** The status of a request refused by a limit (default 429), a whole number from 400 to 599. */
  statusCode?: number;
  /** Receives `storeError` for each store error that reaches the gate (see `onStoreError`). */
  observer?: Observer;
  /** Send `RateLimit-Policy` and `RateLimit` (default true). */
  draftHeaders?: boolean;
  /** Send `X-RateLimit-Limit/-Remaining/-Reset` (default false); true means `delta-seconds`. */
  legacyHeaders?: boolean | LegacyReset;
  /**
   * Add `pk` to the draft headers (default false: none): `{ secret }` makes it the first 16 bytes
   * of HMAC-SHA-256 of the store key under `secret` (a string or bytes, at least 16 bytes; use 32
   * random bytes), which every process of one deployment must share. Without the secret the key
   * cannot be recovered from `pk`; `true` without a secret is refused.
   */
  partitionKeys?: false | { secret: string | Uint8Array };
  /** Header marking a response decided without the store (default `floodgate-degraded`; false: none). */
  degradedHeader?: string | false;
  /** Longest store key in UTF-16 code units (default 256, at least 128); longer keys are hashed. */
  maxKeyLength?: number;
  /** Receives one-time warnings and store failures (default: console). */
  logger?: Logger;
  /** Clock for `epoch-seconds` legacy resets (default the system clock); limiters keep their own. */
  clock?: Clock;
}

/** Settings are checked options with defaults applied. */
export interface Settings<Req> {
  readonly dimensions: readonly CheckedDimension<Req>[];
  readonly cost: ((req: HttpRequest<Req>) => number) | undefined;
  readonly skip: ((req: HttpRequest<Req>) => boolean) | undefined;
  readonly allowList: readonly IpRange[];
  readonly refundWhen: ((outcome: Outcome, req: HttpRequest<Req>) => boolean) | undefined;
  readonly onStoreError: StoreErrorPolicy;
  readonly draftHeaders: boolean;
  readonly legacyReset: LegacyReset | undefined;
  /** The partition-key secret as bytes; undefined when partition keys are off. */
  readonly partitionKeys: Uint8Array | undefined;
  readonly degradedHeader: string | undefined;
  readonly maxKeyLength: number;
  readonly logger: Logger;
  readonly observer: Observer | undefined;
  readonly clock: Clock;
  readonly onLimit: ((req: HttpRequest<Req>, info: RateLimitInfo) => void) | undefined;
  /** The `message`/`statusCode` refusal; undefined for the problem+json 429. */
  readonly refusal: RefusalResponse | undefined;
}

/** CheckedDimension is a {@link Dimension} with its defaults filled in. */
export interface CheckedDimension<Req> {
  readonly name: string;
  /** The limiter when fixed; undefined when `choose` picks per request. */
  readonly limiter: Limiter | undefined;
  readonly choose: ((req: HttpRequest<Req>) => Limiter | undefined) | undefined;
  readonly key: Identity<Req>;
  readonly quotaUnit: QuotaUnit;
  /** The `RateLimit-Policy` item of a fixed limiter without `pk`, written once; else undefined. */
  readonly policyItem: string | undefined;
  /** The start of its `RateLimit` item, `"name";r=`. */
  readonly serviceHead: string;
  /** The option its identity function was given as (`key`, `dimensions[1].key`), for errors. */
  readonly keyOption: string;
  /** The option its limiter (or chooser) was given as (`limiter`, `dimensions[1].limiter`), for errors. */
  readonly limiterOption: string;
}

/** checkOptions returns the settings for `options`, or throws an `INVALID_OPTION` error naming the fault. */
export function checkOptions<Req>(options: HttpLimitOptions<Req>): Settings<Req> {
  const o = requireObject<HttpLimitOptions<Req>>(options, 'floodgate http options');
  const legacy = o.legacyHeaders ?? false;
  if (legacy !== false && legacy !== true && legacy !== 'delta-seconds' && legacy !== 'epoch-seconds') {
    throw invalid('legacyHeaders', 'true, false, "delta-seconds" or "epoch-seconds"', legacy);
  }
  const onStoreError = o.onStoreError ?? 'fail-open';
  if (onStoreError !== 'fail-open' && onStoreError !== 'fail-closed' && onStoreError !== 'throw') {
    throw invalid('onStoreError', '"fail-open", "fail-closed" or "throw"', onStoreError);
  }
  if (o.observer !== undefined && (typeof o.observer !== 'object' || o.observer === null))
    throw invalid('observer', 'an object of hooks', o.observer);
  const maxKeyLength = o.maxKeyLength ?? DEFAULT_MAX_KEY_LENGTH;
  if (!Number.isSafeInteger(maxKeyLength) || maxKeyLength < MIN_MAX_KEY_LENGTH) {
    throw invalid('maxKeyLength', `a whole number of at least ${MIN_MAX_KEY_LENGTH}`, maxKeyLength);
  }
  const degraded = o.degradedHeader ?? 'floodgate-degraded';
  if (degraded !== false && (typeof degraded !== 'string' || !/^[A-Za-z0-9-]+$/.test(degraded))) {
    throw invalid('degradedHeader', 'a header name or false', degraded);
  }
  return {
    dimensions: checkDimensions(o),
    cost: optionalFunction(o.cost, 'cost'),
    skip: preflightSkip(o.exemptPreflight, optionalFunction(o.skip, 'skip')),
    allowList: (o.allowList ?? []).map((r, i) => parseIpRange(String(r), `allowList[${i}]`)),
    refundWhen: optionalFunction(o.refundWhen, 'refundWhen'),
    onStoreError,
    draftHeaders: o.draftHeaders ?? true,
    legacyReset: legacy === true ? 'delta-seconds' : legacy === false ? undefined : legacy,
    partitionKeys: partitionSecret(o.partitionKeys),
    degradedHeader: degraded === false ? undefined : degraded,
    maxKeyLength,
    logger: o.logger ?? consoleLogger,
    observer: o.observer,
    clock: o.clock ?? systemClock,
    onLimit: optionalFunction(o.onLimit, 'onLimit'),
    refusal: refusalOf(o.message, o.statusCode),
  };
}

function checkDimensions<Req>(o: HttpLimitOptions<Req>): CheckedDimension<Req>[] {
  if ((o.limiter === undefined) === (o.dimensions === undefined)) {
    throw new FloodgateError(
      'INVALID_OPTION',
      'give either limiter (one policy) or dimensions (several), not both and not neither',
      'limiter',
    );
  }
  const given: readonly Dimension<Req>[] = o.dimensions ?? [
    { name: o.name ?? 'default', limiter: o.limiter!, ...(o.key ? { key: o.key } : {}) },
  ];
  if (!Array.isArray(given) || given.length === 0)
    throw invalid('dimensions', 'a non-empty array of { name, limiter, key }', given);
  const names = new Set<string>();
  return given.map((d, i) => {
    const at = `dimensions[${i}]`;
    const named = (field: string): string => (o.dimensions === undefined ? field : `${at}.${field}`);
    requireObject<Dimension<Req>>(d, at);
    if (typeof d.name !== 'string' || !POLICY_NAME.test(d.name))
      throw invalid(`${at}.name`, '1-64 of A-Z a-z 0-9 _ . -', d.name);
    if (names.has(d.name)) throw invalid(`${at}.name`, 'unique among the dimensions', d.name);
    names.add(d.name);
    const fixed = d.limiter instanceof Limiter;
    if (!fixed && typeof d.limiter !== 'function')
      throw invalid(`${at}.limiter`, 'a Limiter or a function returning one', d.limiter);
    const unit = d.quotaUnit ?? 'requests';
    if (!['requests', 'content-bytes', 'concurrent-requests'].includes(unit))
      throw invalid(`${at}.quotaUnit`, '"requests", "content-bytes" or "concurrent-requests"', unit);
    const limiter = fixed ? (d.limiter as Limiter) : undefined;
    return {
      name: d.name,
      limiter,
      choose: fixed ? undefined : (d.limiter as (req: HttpRequest<Req>) => Limiter | undefined),
      key: optionalFunction(d.key, `${at}.key`) ?? byIp(),
      quotaUnit: unit,
      policyItem:
        limiter === undefined ? undefined : policyItem({ name: d.name, policy: limiter.policy, unit, pk: undefined }),
      serviceHead: serviceHead(d.name),
      keyOption: named('key'),
      limiterOption: named('limiter'),
    };
  });
}

function preflightSkip<Req>(
  exempt: unknown,
  skip: ((req: HttpRequest<Req>) => boolean) | undefined,
): ((req: HttpRequest<Req>) => boolean) | undefined {
  if (exempt !== undefined && typeof exempt !== 'boolean') throw invalid('exemptPreflight', 'true or false', exempt);
  return exempt === true ? withPreflightExempt(skip) : skip;
}

function partitionSecret(value: unknown): Uint8Array | undefined {
  if (value === undefined || value === false) return undefined;
  const secret: unknown =
    typeof value === 'object' && value !== null ? (value as { secret?: unknown }).secret : undefined;
  const bytes =
    typeof secret === 'string' ? Buffer.from(secret, 'utf8') : secret instanceof Uint8Array ? secret : undefined;
  if (bytes === undefined || bytes.length < MIN_PARTITION_SECRET_BYTES) {
    throw invalid(
      'partitionKeys',
      `false or { secret } with a secret of at least ${MIN_PARTITION_SECRET_BYTES} bytes shared by every process (pk is an HMAC of the key)`,
      value,
    );
  }
  return bytes;
}

function optionalFunction<F>(value: F | undefined, option: string): F | undefined {
  if (value !== undefined && typeof value !== 'function') throw invalid(option, 'a function', value);
  return value;
}

function invalid(option: string, expected: string, got: unknown): FloodgateError {
  return new FloodgateError('INVALID_OPTION', `${option} must be ${expected}, got ${describeValue(got)}`, option);
}
