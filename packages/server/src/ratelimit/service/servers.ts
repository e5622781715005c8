/**
 * Starting the decision service's listeners: Envoy's gRPC API and the JSON API.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import * as grpc from '@grpc/grpc-js';
import { FloodgateError } from 'floodgate';
import { addRateLimitService } from './grpc.js';
import { addHealthService } from './health.js';
import { rateLimitHttpHandler } from './http.js';
import type { RateLimitService } from './service.js';
import { addRateLimitQuotaService } from '../quota/grpc.js';
import type { QuotaService } from '../quota/service.js';

/** RateLimitServersOptions configures {@link startRateLimitServers}. */
export interface RateLimitServersOptions {
  service: RateLimitService;
  /** The gRPC port (0: any free port), serving Envoy's RateLimitService and gRPC health checks; undefined starts no gRPC listener. */
  grpcPort?: number;
  /** The HTTP port for the JSON API (0: any free port); undefined starts no HTTP listener. */
  httpPort?: number;
  /** The address to listen on (default `127.0.0.1`). */
  host?: string;
  /** TLS on the gRPC listener; without it the listener is plaintext (as Envoy's service is by default). */
  grpcTls?: GrpcTls;
  /** A `ShouldRateLimit` OpenTelemetry span per request (default false); spans go where the process's OpenTelemetry SDK sends them. */
  tracing?: boolean;
  /** Envoy's Rate Limit Quota Service (RLQS) on the gRPC listener too, for the domains' `quota:` sections. */
  quota?: QuotaService;
}

/** GrpcTls is the gRPC listener's certificate and key (PEM), and, to require client certificates, the CA that signs them. */
export interface GrpcTls {
  readonly certPem: string | Buffer;
  readonly keyPem: string | Buffer;
  /** Clients must present a certificate this CA signed (mutual TLS). */
  readonly clientCaPem?: string | Buffer;
}

function credentialsOf(tls: GrpcTls | undefined): grpc.ServerCredentials {
  if (tls === undefined) return grpc.ServerCredentials.createInsecure();
  const ca = tls.clientCaPem === undefined ? null : Buffer.from(tls.clientCaPem);
  return grpc.ServerCredentials.createSsl(
    ca,
    [{ private_key: Buffer.from(tls.keyPem), cert_chain: Buffer.from(tls.certPem) }],
    ca !== null,
  );
}

/** RateLimitServers are running listeners, with the ports they got. */
export interface RateLimitServers {
  /** The gRPC port, or undefined when none was started. */
  readonly grpcPort: number | undefined;
  /** The HTTP port, or undefined when none was started. */
  readonly httpPort: number | undefined;
  /** close stops both listeners: calls in flight are answered, idle connections closed. */
  close(): Promise<void>;
}

function checkPort(port: unknown, name: string): void {
  if (port !== undefined && (typeof port !== 'number' || !Number.isInteger(port) || port < 0 || port > 65535)) {
    throw new FloodgateError(
      'INVALID_OPTION',
      `startRateLimitServers.${name} must be a port from 0 (any free port) to 65535, got ${String(port)}`,
      `startRateLimitServers.${name}`,
    );
  }
}

function listenGrpc(
  service: RateLimitService,
  host: string,
  port: number,
  options: { readonly tls: GrpcTls | undefined; readonly tracing: boolean; readonly quota: QuotaService | undefined },
): Promise<{ server: grpc.Server; port: number }> {
  const credentials = credentialsOf(options.tls);
  const server = new grpc.Server();
  addRateLimitService(server, service, { tracing: options.tracing });
  if (options.quota !== undefined) addRateLimitQuotaService(server, options.quota);
  addHealthService(server, service.health);
  const address = host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
  return new Promise((resolve, reject) => {
    server.bindAsync(address, credentials, (error, bound) => {
      if (error !== null) reject(new Error(`cannot listen for gRPC on ${address}: ${error.message}`, { cause: error }));
      else resolve({ server, port: bound });
    });
  });
}

function listenHttp(
  service: RateLimitService,
  host: string,
  port: number,
  tracing: boolean,
): Promise<{ server: Server; port: number }> {
  const server = createServer(rateLimitHttpHandler(service, { tracing }));
  server.keepAliveTimeout = 60_000;
  return new Promise((resolve, reject) => {
    server.once('error', (error) =>
      reject(new Error(`cannot listen for HTTP on ${host}:${port}: ${error.message}`, { cause: error })),
    );
    server.listen(port, host, () => resolve({ server, port: (server.address() as AddressInfo).port }));
  });
}

function closeGrpc(server: grpc.Server): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      server.forceShutdown();
      resolve();
    }, 2000);
    server.tryShutdown(() => {
      clearTimeout(timer);
      resolve();
    });
  });
}

function closeHttp(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeIdleConnections();
  });
}

/**
 * startRateLimitServers starts the gRPC listener (Envoy's `RateLimitService`) and the HTTP
 * listener (the JSON API) that `options` asks for, and resolves with their ports once both
 * listen. It rejects, closing what it opened, when a port cannot be bound.
 *
 * @example
 * const servers = await startRateLimitServers({ service, grpcPort: 8081, httpPort: 8080 });
 * process.on('SIGTERM', () => void servers.close());
 */
export async function startRateLimitServers(options: RateLimitServersOptions): Promise<RateLimitServers> {
  checkPort(options.grpcPort, 'grpcPort');
  checkPort(options.httpPort, 'httpPort');
  if (options.grpcPort === undefined && options.httpPort === undefined)
    throw new FloodgateError('INVALID_OPTION', 'startRateLimitServers needs grpcPort, httpPort or both', 'grpcPort');
  const host = options.host ?? '127.0.0.1';
  const grpcServer =
    options.grpcPort === undefined
      ? undefined
      : await listenGrpc(options.service, host, options.grpcPort, {
          tls: options.grpcTls,
          tracing: options.tracing === true,
          quota: options.quota,
        });
  let httpServer: { server: Server; port: number } | undefined;
  try {
    httpServer =
      options.httpPort === undefined
        ? undefined
        : await listenHttp(options.service, host, options.httpPort, options.tracing === true);
  } catch (error) {
    if (grpcServer !== undefined) await closeGrpc(grpcServer.server);
    throw error;
  }
  return {
    grpcPort: grpcServer?.port,
    httpPort: httpServer?.port,
    close: async () => {
      await Promise.all([
        grpcServer === undefined ? undefined : closeGrpc(grpcServer.server),
        httpServer === undefined ? undefined : closeHttp(httpServer.server),
      ]);
    },
  };
}
