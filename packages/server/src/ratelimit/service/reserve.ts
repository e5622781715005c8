/**
 * `POST /v1/reserve`: a reservation on one of a domain's smooth limits, answered as a wait, so that
 * callers in any language pace themselves. Guava's semantics: `{ domain, name, key?, permits?,
 * maxWaitMs? }` reserves `permits` (default 1) on the limit's limiter for `key` (default ""), and
 * answers `{ admitted: true, waitMs }` (the caller waits `waitMs`, in ms with whole µs, before
 * using them); with `maxWaitMs`, only when the wait would be at most that (Guava's `tryAcquire`
 * timeout; negative counts as 0), else `{ admitted: false, waitMs: null }`, reserving nothing.
 */
import { FloodgateError, type Clock, type Store } from 'floodgate';
import type { DomainSpec } from './config.js';
import { DecisionError, REQUEST_LIMITS } from './request.js';
import { smoothBookFor, type SmoothBook } from './smooth-books.js';
import { smoothLimitId, type SmoothLimitSpec } from './smooth-config.js';

/** ReserveRequest is a checked `POST /v1/reserve` body. */
export interface ReserveRequest {
  readonly domain: string;
  readonly name: string;
  readonly key: string;
  /** A whole number from 1 to 4294967295. */
  readonly permits: number;
  /** The longest wait to reserve, in ms; undefined: any wait (Guava's `reserve`). */
  readonly maxWaitMs: number | undefined;
}

/** ReserveAnswer is the answer: admitted with the wait in ms, or not admitted (nothing reserved). */
export type ReserveAnswer =
  { readonly admitted: true; readonly waitMs: number } | { readonly admitted: false; readonly waitMs: null };

const KEYS = new Set(['domain', 'name', 'key', 'permits', 'maxWaitMs']);

function invalid(field: string, message: string): DecisionError {
  return new DecisionError('INVALID_REQUEST', `${field} ${message}`, field);
}

function textOf(value: unknown, field: string, emptyOk: boolean): string {
  if (typeof value !== 'string' || (!emptyOk && value === ''))
    throw invalid(field, emptyOk ? 'must be a string' : 'must be a non-empty string');
  if (value.length > REQUEST_LIMITS.maxTextLength)
    throw invalid(field, `is ${value.length} characters long; at most ${REQUEST_LIMITS.maxTextLength} are accepted`);
  return value;
}

/**
 * parseReserveRequest returns the checked form of a `POST /v1/reserve` body, or throws
 * {@link DecisionError} `INVALID_REQUEST` naming the first bad field: not an object, an unknown
 * field, a missing domain or name, a key that is not a string, `permits` that is not a whole
 * number from 1 to 4294967295, a `maxWaitMs` that is not a finite number (or null), text over 1024
 * characters.
 */
export function parseReserveRequest(raw: unknown): ReserveRequest {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    throw invalid('request', 'must be an object with domain, name, key, permits and maxWaitMs');
  const r = raw as Record<string, unknown>;
  for (const k of Object.keys(r))
    if (!KEYS.has(k))
      throw invalid(k, 'is not a field of a reservation; expected domain, name, key, permits, maxWaitMs');
  const permits = r.permits ?? 1;
  if (
    typeof permits !== 'number' ||
    !Number.isInteger(permits) ||
    permits < 1 ||
    permits > REQUEST_LIMITS.maxHitsAddend
  )
    throw invalid('permits', `must be a whole number from 1 to ${REQUEST_LIMITS.maxHitsAddend}`);
  const maxWaitMs = r.maxWaitMs ?? undefined;
  if (maxWaitMs !== undefined && (typeof maxWaitMs !== 'number' || !Number.isFinite(maxWaitMs)))
    throw invalid(
      'maxWaitMs',
      'must be a finite number of ms (negative counts as 0), or left out to reserve whatever the wait',
    );
  return {
    domain: textOf(r.domain, 'domain', false),
    name: textOf(r.name, 'name', false),
    key: r.key === undefined ? '' : textOf(r.key, 'key', true),
    permits,
    maxWaitMs,
  };
}

/**
 * Reservations answers reservations on the smooth limits of the domains served, on the service's
 * store: its Redis when it is a RedisStore (every service process on it shares each limiter),
 * else this process. A reload keeps the limiters of every limit whose settings did not change; a
 * changed one starts anew.
 */
export class Reservations {
  private limits = new Map<string, Map<string, { readonly spec: SmoothLimitSpec; readonly id: string }>>();
  private book: Promise<SmoothBook> | undefined;

  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
    /** What a reservation's key becomes before it names a store key (the service's `hideValue`). */
    private readonly hideKey?: (key: string) => string,
  ) {}

  /** reload serves the smooth limits of `domains` from now on. */
  reload(domains: readonly DomainSpec[]): void {
    const next = new Map<string, Map<string, { spec: SmoothLimitSpec; id: string }>>();
    for (const d of domains) {
      const byName = new Map<string, { spec: SmoothLimitSpec; id: string }>();
      for (const spec of d.smoothLimits ?? [])
        byName.set(spec.name, { spec, id: `${d.domain}:${smoothLimitId(spec)}` });
      if (byName.size > 0) next.set(d.domain, byName);
    }
    this.limits = next;
  }

  /**
   * reserve answers `request`. It rejects with {@link DecisionError} `INVALID_REQUEST` (field
   * `name`) for a limit the domain does not declare, or a key too long for its Redis name, and
   * with the store's `FloodgateError` (`STORE_ERROR`, `STORE_TIMEOUT`) when Redis fails and the
   * store's `onError` is `throw` (by default its local fallback answers instead).
   */
  async reserve(request: ReserveRequest): Promise<ReserveAnswer> {
    const limit = this.limits.get(request.domain)?.get(request.name);
    if (limit === undefined) {
      const known = [...(this.limits.get(request.domain)?.keys() ?? [])];
      throw invalid(
        'name',
        `names no smooth limit of domain ${JSON.stringify(request.domain)}; ${known.length === 0 ? 'it declares none (smooth_limits: in its config)' : `it declares ${known.join(', ')}`}`,
      );
    }
    this.book ??= smoothBookFor(this.store, this.clock);
    let waitMs: number | false;
    try {
      waitMs = await (
        await this.book
      ).reserve(limit.spec, limit.id, this.hideKey?.(request.key) ?? request.key, request.permits, request.maxWaitMs);
    } catch (error) {
      if (error instanceof FloodgateError && error.code === 'INVALID_KEY') throw invalid('key', error.message);
      throw error;
    }
    return waitMs === false ? { admitted: false, waitMs: null } : { admitted: true, waitMs };
  }
}
