/**
 * The time units of Envoy's rate limits: their names in a descriptor config, their length in ms,
 * and their numbers in Envoy's protos.
 */

/** RateLimitUnit names a unit of Envoy's `rate_limit.unit`, in lower case. */
export type RateLimitUnit = 'second' | 'minute' | 'hour' | 'day' | 'week' | 'month' | 'year';

const DAY_MS = 86_400_000;

/**
 * UNIT_MS gives each unit's length in ms. Windows are aligned to the epoch, as Envoy's service
 * aligns them (a month is 30 days and a year 365, as there).
 */
export const UNIT_MS: Readonly<Record<RateLimitUnit, number>> = Object.freeze({
  second: 1000,
  minute: 60_000,
  hour: 3_600_000,
  day: DAY_MS,
  week: 7 * DAY_MS,
  month: 30 * DAY_MS,
  year: 365 * DAY_MS,
});

/** UNITS lists the unit names a config accepts. */
export const UNITS: readonly RateLimitUnit[] = Object.freeze(Object.keys(UNIT_MS) as RateLimitUnit[]);

/**
 * RESPONSE_UNIT_NUMBER gives each unit's number in `RateLimitResponse.RateLimit.Unit`
 * (UNKNOWN 0, SECOND 1, MINUTE 2, HOUR 3, DAY 4, MONTH 5, YEAR 6, WEEK 7).
 */
export const RESPONSE_UNIT_NUMBER: Readonly<Record<RateLimitUnit, number>> = Object.freeze({
  second: 1,
  minute: 2,
  hour: 3,
  day: 4,
  month: 5,
  year: 6,
  week: 7,
});

/**
 * unitOf returns the unit that `value` names, or undefined. It takes a config or JSON name in any
 * case (`minute`, `MINUTE`), or a proto enum number (1 to 7, as in the response's `Unit`).
 */
export function unitOf(value: unknown): RateLimitUnit | undefined {
  if (typeof value === 'string') {
    const lower = value.toLowerCase();
    return (UNITS as readonly string[]).includes(lower) ? (lower as RateLimitUnit) : undefined;
  }
  if (typeof value === 'number') {
    return UNITS.find((unit) => RESPONSE_UNIT_NUMBER[unit] === value);
  }
  return undefined;
}
