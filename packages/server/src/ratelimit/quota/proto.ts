/**
 * Envoy's Rate Limit Quota Service protos as the server and its tests load them.
 */
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { PROTO_LOADER_OPTIONS } from '../protocol/proto.js';

/** RLQS_PROTO is the path of `rlqs.proto` under the proto root. */
export const RLQS_PROTO = 'envoy/service/rate_limit_quota/v3/rlqs.proto';

/** RLQS_SERVICE_NAME is the service's full name, as Envoy's `grpc_service` calls it. */
export const RLQS_SERVICE_NAME = 'envoy.service.rate_limit_quota.v3.RateLimitQuotaService';

let loaded: grpc.ServiceClientConstructor | undefined;

/**
 * loadRateLimitQuotaService returns the `RateLimitQuotaService` definition (for a server, or a
 * client's constructor), loaded once per process with the rate limit service's loader options
 * (proto field names, 64-bit numbers as strings, enums as names).
 */
export function loadRateLimitQuotaService(): grpc.ServiceClientConstructor {
  if (loaded !== undefined) return loaded;
  const definition = protoLoader.loadSync(RLQS_PROTO, PROTO_LOADER_OPTIONS);
  const pkg = grpc.loadPackageDefinition(definition) as unknown as {
    envoy: { service: { rate_limit_quota: { v3: { RateLimitQuotaService: grpc.ServiceClientConstructor } } } };
  };
  loaded = pkg.envoy.service.rate_limit_quota.v3.RateLimitQuotaService;
  return loaded;
}
