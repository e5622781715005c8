/**
 * The policy every subject is configured with, so that all libraries answer the same question.
 *
 * Hot key, admitting: a limit so large it is never reached during the run.
 * Hot key, rejecting: a limit of one request, spent before timing, with a refill far too slow to
 * bring it back during the run: every timed call is refused.
 * Many keys: a daily quota, 1000 per day (a bucket of 1000 refilling 1000/day, or 1000 per one-day
 * window), which a few passes over each key never exhaust. It is slow on purpose: floodgate's
 * MemoryStore forgets a key once its state is back to that of a fresh key (a refilled bucket),
 * so with a fast refill keys would leave the store during the run and "all held" would not hold.
 * At 1000/day, one spent token takes 86 s to come back, longer than the case runs.
 */
export const HUGE = 1e12;
/** Refill rates of the hot-key buckets, per second. */
export const HUGE_REFILL_PER_SECOND = 1e12;
export const TINY_REFILL_PER_SECOND = 1e-6;
/** Window of the fixed-window peers (express-rate-limit, @fastify/rate-limit, rate-limiter-flexible). */
export const WINDOW_MS = 60 * 60 * 1000;

/** The many-keys policy: a bucket of 1000 refilling 1000 per day, or 1000 per one-day window. */
export const MANY_LIMIT = 1000;
export const MANY_WINDOW_MS = 24 * 60 * 60 * 1000;
export const MANY_REFILL_PER_SECOND = MANY_LIMIT / (MANY_WINDOW_MS / 1000);

/** The one key of the hot-key case (same shape as the many-keys keys). */
export const HOT_KEY = 'user:00000000001';
