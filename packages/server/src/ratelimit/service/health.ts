/**
 * gRPC's health checking protocol (`grpc.health.v1.Health`), so that Envoy's gRPC health checks
 * and Kubernetes' gRPC probes can watch the rate limit service, and the service's health itself:
 * serving, or not while its store is away when so configured.
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

/**
 * ServiceHealth is whether the service is serving. It starts serving; {@link ServiceHealth.set}
 * changes it (the CLI does when the store's circuit opens and closes, if health follows the
 * store), and every `Watch` stream hears each change.
 */
export class ServiceHealth {
  private current = true;
  private readonly listeners = new Set<(serving: boolean) => void>();

  /** serving is true while the service answers as it should. */
  get serving(): boolean {
    return this.current;
  }

  /** set changes the health, telling every listener when it changed. */
  set(serving: boolean): void {
    if (serving === this.current) return;
    this.current = serving;
    for (const listener of this.listeners) listener(serving);
  }

  /** listen calls `listener` on each change until the returned function is called. */
  listen(listener: (serving: boolean) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}

function statusOf(request: unknown, health: ServiceHealth): string | undefined {
  const service = (request as { service?: unknown } | null)?.service ?? '';
  if (typeof service !== 'string' || !HEALTH_SERVICES.includes(service)) return undefined;
  return health.serving ? 'SERVING' : 'NOT_SERVING';
}

/**
 * addHealthService adds `grpc.health.v1.Health` to `server`: `Check` answers SERVING (or
 * NOT_SERVING while `health` says so) for the server ('') and for Envoy's RateLimitService, and
 * NOT_FOUND for any other name; `Watch` sends the status, then each change (SERVICE_UNKNOWN once
 * for another name), until the caller leaves.
 */
export function addHealthService(server: grpc.Server, health: ServiceHealth = new ServiceHealth()): void {
  server.addService(loadHealthService().service, {
    Check(call: grpc.ServerUnaryCall<unknown, unknown>, callback: grpc.sendUnaryData<unknown>) {
      const status = statusOf(call.request, health);
      if (status === undefined)
        callback({
          code: grpc.status.NOT_FOUND,
          details: `unknown service ${JSON.stringify((call.request as { service?: string }).service)}`,
        });
      else callback(null, { status });
    },
    Watch(call: grpc.ServerWritableStream<unknown, unknown>) {
      const first = statusOf(call.request, health);
      call.write({ status: first ?? 'SERVICE_UNKNOWN' });
      const stop =
        first === undefined
          ? () => undefined
          : health.listen((serving) => call.write({ status: serving ? 'SERVING' : 'NOT_SERVING' }));
      call.on('cancelled', () => {
        stop();
        call.end();
      });
    },
  });
}
