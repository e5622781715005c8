/**
 * The decision service: Envoy's rate limit API (`RateLimitService/ShouldRateLimit` over gRPC),
 * Envoy's descriptor config, a JSON API and a client, on any floodgate store.
 *
 * @example
 * const parsed = parseDescriptorConfig(text, 'ratelimit.yaml');
 * if ('errors' in parsed) throw new Error(parsed.errors.map(formatConfigError).join('\n'));
 * const service = createDecisionService({ domains: parsed.config.domains, store });
 * const servers = await startDecisionServers({ service, grpcPort: 8081, httpPort: 8080 });
 *
 * @packageDocumentation
 */
export {
  formatConfigError,
  mergeDescriptorConfigs,
  parseDescriptorConfig,
  type ConfigError,
  type DecisionAlgorithm,
  type DescriptorConfig,
  type DescriptorSpec,
  type DomainSpec,
  type RateLimitSpec,
} from './config.js';
export {
  createDecisionService,
  DecisionService,
  MAX_UINT32,
  type DecideMode,
  type DecisionResult,
  type DecisionServiceOptions,
  type DescriptorStatus,
} from './service.js';
export {
  DecisionError,
  parseDecisionRequest,
  REQUEST_LIMITS,
  type DecisionErrorCode,
  type DecisionRequest,
  type RequestDescriptor,
} from './request.js';
export { startDecisionServers, type DecisionServers, type DecisionServersOptions } from './servers.js';
export {
  addRateLimitService,
  loadRateLimitService,
  PROTO_LOADER_OPTIONS,
  PROTO_ROOT,
  rateLimitHandlers,
  rateLimitServiceDefinition,
  toResponseMessage,
} from './grpc.js';
export { encodeRateLimitResponse } from './wire.js';
export { decisionHttpHandler, decideJson, envoyJson, MAX_BODY_BYTES } from './http.js';
export { rateLimitHeaders } from './headers.js';
export { counterKey, type DescriptorEntry, type Match, type Rule } from './rules.js';
export { UNIT_MS, UNITS, type RateLimitUnit } from './units.js';
export {
  DecisionClient,
  type ClientDecision,
  type ClientDescriptor,
  type ClientOnError,
  type ClientRequest,
  type ClientStatus,
  type DecisionClientOptions,
} from './client.js';
export { addHealthService, HEALTH_SERVICES, loadHealthService } from './health.js';
export { RemoteStore, type RemoteStoreOptions } from './remote-store.js';
export type { ServiceGuardOptions } from './service-guard.js';
export {
  buildPolicy,
  MAX_REMOTE_BATCH,
  MAX_REMOTE_KEY_LENGTH,
  MAX_REMOTE_POLICIES,
  policySpecOf,
  REMOTE_ALGORITHMS,
  StoreApi,
  type PolicySpec,
  type StoreOp,
} from './store-api.js';
