/**
 * The rate limit service (`floodgate ratelimit`, `rateLimitService:` in a gateway config): Envoy's rate limit API (`RateLimitService/ShouldRateLimit` over gRPC),
 * Envoy's descriptor config and a JSON API on any floodgate store (`service/`), and its client
 * half (`client/`: `RateLimitClient`, `RemoteStore`), which speaks the protocol in `protocol/`.
 *
 * @example
 * const parsed = parseDescriptorConfig(text, 'ratelimit.yaml');
 * if ('errors' in parsed) throw new Error(parsed.errors.map(formatConfigError).join('\n'));
 * const service = createRateLimitService({ domains: parsed.config.domains, store });
 * const servers = await startRateLimitServers({ service, grpcPort: 8081, httpPort: 8080 });
 *
 * @packageDocumentation
 */
export {
  formatConfigError,
  mergeDescriptorConfigs,
  parseDescriptorConfig,
  type ConfigError,
  type DescriptorConfig,
  type DomainSpec,
} from './service/config.js';
export {
  createRateLimitService,
  RateLimitService,
  MAX_UINT32,
  type DecideMode,
  type DecisionResult,
  type RateLimitServiceOptions,
  type DescriptorStatus,
} from './service/service.js';
export {
  DecisionError,
  parseDecisionRequest,
  REQUEST_LIMITS,
  type DecisionErrorCode,
  type DecisionRequest,
  type RequestDescriptor,
} from './service/request.js';
export {
  startRateLimitServers,
  type GrpcTls,
  type RateLimitServers,
  type RateLimitServersOptions,
} from './service/servers.js';
export {
  addRateLimitService,
  rateLimitHandlers,
  rateLimitServiceDefinition,
  toResponseMessage,
} from './service/grpc.js';
export { loadRateLimitService, PROTO_LOADER_OPTIONS, PROTO_ROOT, RLS_PROTO } from './protocol/proto.js';
export { encodeRateLimitResponse } from './service/wire.js';
export {
  AUTH_FIELD,
  authAnswer,
  INVALID_VALUE_ANSWER,
  readAuthRequest,
  type AuthAnswer,
  type AuthRequest,
} from './service/auth-request.js';
export { parseReserveRequest, Reservations, type ReserveAnswer, type ReserveRequest } from './service/reserve.js';
export { MAX_SMOOTH_KEYS, SMOOTH_IDLE_MS, type SmoothBook } from './service/smooth-books.js';
export type { SmoothLimitSpec } from './service/smooth-config.js';
export { rateLimitHttpHandler, decideJson, envoyJson, MAX_BODY_BYTES } from './service/http.js';
export {
  DRAFT_HEADERS,
  ENVOY_HEADERS,
  namedResponseHeaders,
  policyNames,
  rateLimitHeaders,
  RESPONSE_HEADER_MODES,
  responseHeaders,
  X_RATELIMIT_HEADERS,
  type ResponseHeaders,
} from './service/headers.js';
export {
  NEAR_LIMIT_RATIO,
  nearLimitOf,
  outcomeOf,
  type DescriptorOutcome,
  type ServiceOutcome,
} from './service/outcome.js';
export { DescriptorLabels, MAX_DESCRIPTOR_LABELS, outcomeLabel } from './service/metric-labels.js';
export { RateLimitMetrics } from './service/metrics.js';
export { counterKey, globMatches, type DescriptorEntry, type Match } from './service/rules.js';
export type { Rule } from './service/rule.js';
export {
  compositeKey,
  type DecisionAlgorithm,
  type DescriptorSpec,
  type RateLimitSpec,
} from './service/config-descriptors.js';
export { UNIT_MS, UNITS, type RateLimitUnit } from './service/units.js';
export { addHealthService, HEALTH_SERVICES, loadHealthService, ServiceHealth } from './service/health.js';
export {
  buildPolicy,
  MAX_REMOTE_BATCH,
  MAX_REMOTE_KEY_LENGTH,
  MAX_REMOTE_POLICIES,
  StoreApi,
} from './service/store-api.js';
export * from './client/index.js';
