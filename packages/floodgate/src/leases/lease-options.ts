import type { Algorithm } from '../core/algorithm.js';
import { FIXED_WINDOW } from '../core/algorithms/fixed-window.js';
import { GCRA } from '../core/algorithms/gcra.js';
import { LEAKY_BUCKET, TOKEN_BUCKET } from '../core/algorithms/token-bucket.js';
import { FloodgateError, describeValue } from '../core/errors.js';
import { requireObject } from '../core/validate.js';
import type { LeaseTerms } from './lease-ledger.js';

/**
 * LeaseOptions configures quota leases for the policies of a {@link redis!LeasedStore}.
 *
 * The bound: with `maxOutstandingShare` s, at most `max(1, floor(s × limit))` units of a key are
 * out on leases at once, across every node. Under a token bucket, leaky bucket or GCRA, that is
 * the most a fleet admits above the policy's own promise over any span of time (the policy
 * counted each unit when it was leased; a lease is only spent later, never twice). Under a fixed
 * window, a lease ends with its window, so every unit is spent in the window that counted it: the
 * window's limit holds exactly, and the share only bounds how much of it sits idle on nodes.
 */
export interface LeaseOptions {
  /**
   * How long units granted to a node may be spent, in ms (default 1000). A node that dies holds its
   * units at most this long; a live node gives back what it has not spent shortly before its lease
   * ends, and everything when it closes. Under a fixed window a lease also ends with its window.
   */
  leaseMs?: number;
  /**
   * The share of the policy's limit that may be out on leases at once across all nodes, above 0 and
   * at most 1 (default 0.02): the worst-case over-admission, and what each node's lease is cut
   * from (its share of it follows its share of the demand on the key).
   */
  maxOutstandingShare?: number;
  /** Most keys a node keeps lease state for (default 10,000); the least recently used beyond that give their units back. */
  maxKeys?: number;
}

/** LeaseSettings are checked {@link LeaseOptions} with their defaults. */
export interface LeaseSettings {
  readonly leaseMs: number;
  readonly maxOutstandingShare: number;
  readonly maxKeys: number;
}

/** The policies leases are sound for, by kind: their units come back exactly through `refund`. */
const LEASABLE: ReadonlySet<symbol> = new Set([TOKEN_BUCKET, LEAKY_BUCKET, GCRA, FIXED_WINDOW]);

/** leaseSettingsOf checks `options` (undefined: every default) and returns the settings, or throws `INVALID_OPTION` naming `where`. */
export function leaseSettingsOf(options: LeaseOptions | undefined, where: string): LeaseSettings {
  const o = options === undefined ? {} : requireObject<LeaseOptions>(options, where);
  const leaseMs = o.leaseMs ?? 1000;
  if (typeof leaseMs !== 'number' || !Number.isFinite(leaseMs) || leaseMs < 1)
    throw bad(`${where}.leaseMs`, 'a finite number of ms, at least 1', leaseMs);
  const share = o.maxOutstandingShare ?? 0.02;
  if (typeof share !== 'number' || !(share > 0 && share <= 1))
    throw bad(`${where}.maxOutstandingShare`, 'a number above 0 and at most 1', share);
  const maxKeys = o.maxKeys ?? 10_000;
  if (!Number.isSafeInteger(maxKeys) || maxKeys < 1)
    throw bad(`${where}.maxKeys`, 'a whole number, at least 1', maxKeys);
  return { leaseMs, maxOutstandingShare: share, maxKeys };
}

/**
 * leaseTermsOf returns the {@link LeaseTerms} of `algorithm` under `settings`.
 *
 * @throws FloodgateError `INVALID_OPTION` for a policy leases are not sound for: the sliding
 * windows (sliding log, sliding window counter, sub-window counter), whose refund cannot tell
 * which part of the window a returned unit was counted in, and any policy without a `kind`.
 */
export function leaseTermsOf(algorithm: Algorithm, settings: LeaseSettings): LeaseTerms {
  if (algorithm.kind === undefined || !LEASABLE.has(algorithm.kind) || !(algorithm.windowMs! > 0)) {
    throw new FloodgateError(
      'INVALID_OPTION',
      `leases cannot run the policy ${JSON.stringify(algorithm.name)}: a lease needs a policy whose units come back exactly when returned (tokenBucket, leakyBucket, gcra or fixedWindow); a sliding window's refund cannot tell which part of its window a returned unit was counted in. Use per-request decisions for it, or one of those policies`,
      'lease.policy',
    );
  }
  return {
    maxOutstanding: maxOutstandingOf(algorithm, settings),
    leaseMs: settings.leaseMs,
    ratePerMs: algorithm.limit / algorithm.windowMs!,
    windowMs: algorithm.kind === FIXED_WINDOW ? algorithm.windowMs! : 0,
  };
}

/** maxOutstandingOf returns how many units of one key may be out on leases at once: `max(1, floor(share × limit))`. */
export function maxOutstandingOf(algorithm: Algorithm, settings: LeaseSettings): number {
  return Math.max(1, Math.floor(settings.maxOutstandingShare * algorithm.limit + 1e-9));
}

/**
 * leaseOverAdmission returns the most units a fleet leasing `algorithm` under `options` can admit
 * above the policy's own promise: 0 for a fixed window (a lease ends with the window that counted
 * it), else the units that may be outstanding at once ({@link maxOutstandingOf}). The store's
 * failure policy (`onError`) adds its own while the store is away.
 *
 * @example
 * leaseOverAdmission(tokenBucket({ capacity: 10_000, refillPerSecond: 10_000 }), { maxOutstandingShare: 0.02 }); // 200
 */
export function leaseOverAdmission(algorithm: Algorithm, options?: LeaseOptions): number {
  const terms = leaseTermsOf(algorithm, leaseSettingsOf(options, 'lease'));
  return terms.windowMs > 0 ? 0 : terms.maxOutstanding;
}

function bad(option: string, wanted: string, value: unknown): FloodgateError {
  return new FloodgateError('INVALID_OPTION', `${option} must be ${wanted}, got ${describeValue(value)}`, option);
}
