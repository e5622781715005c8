/**
 * What a request's rate limiting decided, as the adapters attach it to the request for the
 * handlers after them and hand it to `onLimit`.
 */
import type { Decision } from '../core/decision.js';

/** DimensionDecision is one dimension's decision for a request: its policy name and the limiter's {@link Decision}. */
export interface DimensionDecision {
  /** The dimension's (policy's) name, as in the headers. */
  readonly name: string;
  readonly decision: Decision;
}

/**
 * RateLimitInfo is what the adapters attach to a request for the handlers after them
 * (`req.rateLimit` on Express and node:http, `request.rateLimit` on Fastify,
 * `ctx.state.rateLimit` on Koa, `c.get('rateLimit')` on Hono) and hand to `onLimit`: whether it
 * was admitted, the status of a refusal, and each dimension's decision (`remaining`, `limit`,
 * `resetMs`, `retryAfterMs`, `reason`). `decisions` is empty when nothing was decided: the
 * request was skipped or allow-listed, or a store error was answered by `onStoreError`.
 */
export interface RateLimitInfo {
  readonly allowed: boolean;
  /** 0 when allowed; 429 (quota exceeded), 503 (store full or failed, fail-closed) or 500 (an option function failed) otherwise. */
  readonly statusCode: number;
  /** Each dimension that applied to the request, in the order of `dimensions`. */
  readonly decisions: readonly DimensionDecision[];
}
