/**
 * floodgate/http: rate limiting for HTTP servers. A framework-neutral handler ({@link HttpGate})
 * decides requests over one or more dimensions (per IP, user, route, header...) and writes the
 * IETF draft headers, `Retry-After` and RFC 9457 problem bodies; {@link ConcurrencyGate} does the
 * same for a concurrency limit (overload protection), whose middleware each adapter's entry point
 * also exports (`floodgateConcurrencyExpress` and its siblings). This entry point imports no
 * framework, not even as types: each adapter has its own subpath (`floodgate/http/node`,
 * `floodgate/http/express`, `floodgate/http/fastify`, `floodgate/http/koa`, `floodgate/http/hono`)
 * whose types import only that framework, so an app type-checks with only its own installed.
 *
 * @packageDocumentation
 */
export { ClientIpResolver, type ForwardedHeader, type HeaderSource, type TrustProxyOptions } from './client-ip.js';
export { HttpGate } from './gate.js';
export {
  FIELD,
  policyItem,
  retryAfterSeconds,
  serviceHead,
  serviceItem,
  windowMsOf,
  type LegacyReset,
  type PolicyItemParts,
  type QuotaUnit,
} from './headers.js';
export {
  byFunction,
  byHeader,
  byIp,
  byRoute,
  byUser,
  firstOf,
  type ByIpOptions,
  type ByRouteOptions,
  type Identity,
} from './identity.js';
export { DEFAULT_MAX_KEY_LENGTH, storeKey } from './keys.js';
export type { Dimension, HttpLimitOptions, LimiterChoice, StoreErrorPolicy } from './options.js';
export { OptionFunctionError } from './option-error.js';
export { PROBLEM_CONTENT_TYPE, STATUS_OF, problemBody, type ProblemKind } from './problem.js';
export {
  degradedReason,
  endRefusal,
  refusalKind,
  serviceList,
  storeDownAnswer,
  undecided,
  type DegradedReason,
  type StoreDownAnswer,
} from './answers.js';
export { isDegraded, isStoreFailure } from './failure-report.js';
export { consoleLogger, type Logger } from './logger.js';
export { RequestView, type HttpRequest, type Outcome } from './request.js';
export {
  PASS,
  type Charge,
  type DimensionDecision,
  type HeaderPair,
  type RateLimitInfo,
  type Verdict,
} from './verdict.js';
export { RateLimitedError } from './refusal-error.js';
export {
  BruteForceGuard,
  bruteForceGuard,
  type BruteForceGuardOptions,
  type BruteForceRule,
  type GuardAnswer,
} from './brute-force.js';
export {
  ConcurrencyGate,
  type ConcurrencyControl,
  type HttpConcurrencyOptions,
  type ShedResponse,
} from './overload-gate.js';
export { CallHold } from './call-hold.js';
export { callOutcome, isTimeoutError, type CallEnding } from './call-outcome.js';
export {
  EventLoopPressure,
  watchEventLoop,
  type DelayHistogram,
  type DelayMonitor,
  type EventLoopDelayOptions,
} from './event-loop-pressure.js';
