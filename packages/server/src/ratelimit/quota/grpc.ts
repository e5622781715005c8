/**
 * Envoy's `envoy.service.rate_limit_quota.v3.RateLimitQuotaService` on a gRPC server (@grpc/grpc-js).
 */
import type * as grpc from '@grpc/grpc-js';
import { loadRateLimitQuotaService } from './proto.js';
import type { QuotaService, QuotaStream } from './service.js';

/**
 * addRateLimitQuotaService adds `StreamRateLimitQuotas`, answered by `quota`, to a gRPC server.
 *
 * @example
 * const server = new grpc.Server();
 * addRateLimitQuotaService(server, new QuotaService({ domains }));
 */
export function addRateLimitQuotaService(server: grpc.Server, quota: QuotaService): void {
  server.addService(loadRateLimitQuotaService().service, {
    StreamRateLimitQuotas(call: grpc.ServerDuplexStream<unknown, unknown>) {
      quota.handle(call as unknown as QuotaStream);
    },
  });
}
