/**
 * RFC 9457 problem details for refused requests, with the problem types of
 * draft-ietf-httpapi-ratelimit-headers-10.
 */

/** PROBLEM_CONTENT_TYPE is the media type of every problem body floodgate sends. */
export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

/** ProblemKind names the draft's problem types floodgate sends. */
export type ProblemKind = 'quota-exceeded' | 'temporary-reduced-capacity';

const TYPE_BASE = 'https://iana.org/assignments/http-problem-types#';

const TITLES: Record<ProblemKind, string> = {
  'quota-exceeded': 'Request cannot be satisfied as assigned quota has been exceeded',
  'temporary-reduced-capacity': 'Request cannot be satisfied due to temporary server capacity constraints',
};

/** STATUS_OF gives the response status for each problem kind: 429 for quota, 503 for capacity. */
export const STATUS_OF: Readonly<Record<ProblemKind, number>> = {
  'quota-exceeded': 429,
  'temporary-reduced-capacity': 503,
};

/**
 * problemBody returns the JSON text of an `application/problem+json` body of `kind`, naming the
 * `violated-policies`, with a `detail` when given.
 */
export function problemBody(kind: ProblemKind, violatedPolicies: readonly string[], detail?: string): string {
  return JSON.stringify({
    type: TYPE_BASE + kind,
    title: TITLES[kind],
    status: STATUS_OF[kind],
    ...(detail === undefined ? {} : { detail }),
    'violated-policies': violatedPolicies,
  });
}

/**
 * capacityProblemBody returns the JSON text of the `temporary-reduced-capacity` problem sent when a
 * concurrency limit sheds a request: it violates no quota policy, so it names none, and its
 * `status` is the one sent (503, or 429 where the application asked for it).
 */
export function capacityProblemBody(statusCode: number, detail: string): string {
  const kind: ProblemKind = 'temporary-reduced-capacity';
  return JSON.stringify({ type: TYPE_BASE + kind, title: TITLES[kind], status: statusCode, detail });
}

/**
 * INTERNAL_PROBLEM is the body of the 500 sent when the application's own rate-limit options fail
 * for a request (an identity, cost, skip or limiter function that throws or returns the wrong
 * type): RFC 9457's `about:blank` type, with nothing of the error itself, which is logged instead.
 */
export const INTERNAL_PROBLEM = JSON.stringify({
  type: 'about:blank',
  title: 'Internal Server Error',
  status: 500,
  detail: 'the rate limit for this request could not be applied',
});
