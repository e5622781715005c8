/**
 * Envoy's rate limit protos as both halves load them: the service to answer
 * `envoy.service.ratelimit.v3.RateLimitService`, the client to call it.
 */
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { PACKAGE_ROOT } from '../../package-root.js';

/** PROTO_ROOT is the folder holding Envoy's protos (`packages/server/proto`), for include paths. */
export const PROTO_ROOT = join(PACKAGE_ROOT, 'proto');

/** RLS_PROTO is the path of `rls.proto` under {@link PROTO_ROOT}. */
export const RLS_PROTO = 'envoy/service/ratelimit/v3/rls.proto';

/**
 * PROTO_LOADER_OPTIONS are how the service loads the protos: field names as in the proto
 * (`hits_addend`), 64-bit numbers as strings, enums as names, absent messages as null.
 */
export const PROTO_LOADER_OPTIONS: protoLoader.Options = {
  keepCase: true,
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
  includeDirs: [PROTO_ROOT],
};

/** loadRateLimitService returns the `RateLimitService` definition (for a server, or a client's constructor). */
export function loadRateLimitService(): grpc.ServiceClientConstructor {
  const definition = protoLoader.loadSync(RLS_PROTO, PROTO_LOADER_OPTIONS);
  const pkg = grpc.loadPackageDefinition(definition) as unknown as {
    envoy: { service: { ratelimit: { v3: { RateLimitService: grpc.ServiceClientConstructor } } } };
  };
  return pkg.envoy.service.ratelimit.v3.RateLimitService;
}
