/**
 * gRPC's health checking protocol (`grpc.health.v1.Health`), so that Envoy's gRPC health checks
 * and Kubernetes' gRPC probes can watch the decision service.
 */
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { PROTO_LOADER_OPTIONS } from '../protocol/proto.js';

/** HEALTH_SERVICES are the service names the health service answers SERVING for ('' is the server as a whole). */
export const HEALTH_SERVICES: readonly string[] = ['', 'envoy.service.ratelimit.v3.RateLimitService'];

/** loadHealthService returns the `grpc.health.v1.Health` definition (for a server, or a client's constructor). */
export function loadHealthService(): grpc.ServiceClientConstructor {
  const definition = protoLoader.loadSync('grpc/health/v1/health.proto', PROTO_LOADER_OPTIONS);
  const pkg = grpc.loadPackageDefinition(definition) as unknown as {
    grpc: { health: { v1: { Health: grpc.ServiceClientConstructor } } };
  };
  return pkg.grpc.health.v1.Health;
}

function statusOf(request: unknown): string | undefined {
  const service = (request as { service?: unknown } | null)?.service ?? '';
  return typeof service === 'string' && HEALTH_SERVICES.includes(service) ? 'SERVING' : undefined;
}

/**
 * addHealthService adds `grpc.health.v1.Health` to `server`: `Check` answers SERVING for the
 * server ('') and for Envoy's RateLimitService, and NOT_FOUND for any other name; `Watch` sends
 * the status once (SERVICE_UNKNOWN for another name) and stays open until the caller leaves.
 */
export function addHealthService(server: grpc.Server): void {
  server.addService(loadHealthService().service, {
    Check(call: grpc.ServerUnaryCall<unknown, unknown>, callback: grpc.sendUnaryData<unknown>) {
      const status = statusOf(call.request);
      if (status === undefined)
        callback({
          code: grpc.status.NOT_FOUND,
          details: `unknown service ${JSON.stringify((call.request as { service?: string }).service)}`,
        });
      else callback(null, { status });
    },
    Watch(call: grpc.ServerWritableStream<unknown, unknown>) {
      call.write({ status: statusOf(call.request) ?? 'SERVICE_UNKNOWN' });
      call.on('cancelled', () => call.end());
    },
  });
}
