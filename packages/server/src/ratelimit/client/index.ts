/**
 * The rate limit service's client half, for gateways and applications that ask a running
 * `floodgate ratelimit`: {@link RateLimitClient} (Envoy's API over gRPC or JSON) and
 * {@link RemoteStore} (a library `Store` whose state lives in the service). It imports nothing of
 * the service but the protocol both speak (`../protocol/`).
 *
 * @example
 * const client = new RateLimitClient({ url: 'grpc://127.0.0.1:8081', onError: 'fail-open' });
 * const store = new RemoteStore({ url: 'http://127.0.0.1:8080' });
 *
 * @packageDocumentation
 */
export {
  RateLimitClient,
  type ClientDecision,
  type ClientDescriptor,
  type ClientOnError,
  type ClientRequest,
  type ClientReservation,
  type ClientReservationAnswer,
  type ClientStatus,
  type RateLimitClientOptions,
} from './client.js';
export { RemoteStore, type RemoteStoreOptions } from './remote-store.js';
export type { ServiceGuardOptions } from './service-guard.js';
export { policySpecOf, REMOTE_ALGORITHMS, type PolicySpec, type StoreOp } from '../protocol/policy-spec.js';
