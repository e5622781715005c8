/**
 * Envoy's `envoy.service.rate_limit_quota.v3.RateLimitQuotaService` on a gRPC server (@grpc/grpc-js).
 * Reports reach the service as bytes and responses leave as bytes: `report.ts` reads them and
 * `wire.ts` writes them, with no object decoded or encoded by the proto library on the way.
 */
import type * as grpc from '@grpc/grpc-js';
import { loadRateLimitQuotaService } from './proto.js';
import type { QuotaService, QuotaStream } from './service.js';

const asBytes = (bytes: Buffer): Buffer => bytes;

/** rateLimitQuotaServiceDefinition returns `RateLimitQuotaService` with `StreamRateLimitQuotas` passing bytes both ways. */
export function rateLimitQuotaServiceDefinition(): grpc.ServiceDefinition {
  const definition = loadRateLimitQuotaService().service;
  const method = definition.StreamRateLimitQuotas!;
  return {
    ...definition,
    StreamRateLimitQuotas: { ...method, requestDeserialize: asBytes, responseSerialize: asBytes },
  };
}

/**
 * addRateLimitQuotaService adds `StreamRateLimitQuotas`, answered by `quota`, to a gRPC server.
 *
 * @example
 * const server = new grpc.Server();
 * addRateLimitQuotaService(server, new QuotaService({ domains }));
 */
export function addRateLimitQuotaService(server: grpc.Server, quota: QuotaService): void {
  server.addService(rateLimitQuotaServiceDefinition(), {
    StreamRateLimitQuotas(call: grpc.ServerDuplexStream<Buffer, Buffer>) {
      quota.handle(call as unknown as QuotaStream);
    },
  });
}
