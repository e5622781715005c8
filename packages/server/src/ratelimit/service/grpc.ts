/**
 * Envoy's `envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit` over gRPC (@grpc/grpc-js),
 * from the .proto files in `packages/server/proto` (Envoy's field numbers and types).
 */
import * as grpc from '@grpc/grpc-js';
import { loadRateLimitService } from '../protocol/proto.js';
import { DecisionError, parseDecisionRequest, type DecisionRequest } from './request.js';
import { MAX_UINT32, type DecisionResult, type RateLimitService, type DescriptorStatus } from './service.js';
import { RESPONSE_UNIT_NUMBER } from './units.js';
import { traced } from './tracing.js';
import { encodeRateLimitResponse } from './wire.js';

/** toDuration returns a google.protobuf.Duration (`seconds` as a string, `nanos`) for `ms` (Infinity as the longest uint32 seconds). */
export function toDuration(ms: number): { seconds: string; nanos: number } {
  if (!Number.isFinite(ms)) return { seconds: String(MAX_UINT32), nanos: 0 };
  const whole = Math.max(0, Math.floor(ms));
  return { seconds: String(Math.floor(whole / 1000)), nanos: (whole % 1000) * 1_000_000 };
}

function statusMessage(s: DescriptorStatus): Record<string, unknown> {
  const message: Record<string, unknown> = { code: s.code, limit_remaining: s.limitRemaining };
  if (s.rule !== undefined && s.rule.unit !== undefined) {
    message.current_limit = {
      requests_per_unit: s.rule.requestsPerUnit,
      unit: RESPONSE_UNIT_NUMBER[s.rule.unit],
      name: s.rule.name ?? '',
    };
  }
  if (s.durationUntilResetMs > 0) message.duration_until_reset = toDuration(s.durationUntilResetMs);
  return message;
}

/** toResponseMessage returns `result` as a `RateLimitResponse` (proto field names). */
export function toResponseMessage(result: DecisionResult): Record<string, unknown> {
  return {
    overall_code: result.overallCode,
    statuses: result.statuses.map(statusMessage),
    response_headers_to_add: result.headers.map(([key, value]) => ({ key, value })),
  };
}

/** grpcErrorOf returns the gRPC status of a failure: INVALID_ARGUMENT for a bad request, UNAVAILABLE for a store failure. */
function grpcErrorOf(error: unknown): Partial<grpc.StatusObject> {
  if (error instanceof DecisionError && error.code === 'INVALID_REQUEST')
    return { code: grpc.status.INVALID_ARGUMENT, details: error.message };
  if (error instanceof DecisionError) return { code: grpc.status.UNAVAILABLE, details: error.message };
  return { code: grpc.status.INTERNAL, details: `internal error: ${(error as Error)?.message ?? String(error)}` };
}

/**
 * rateLimitServiceDefinition returns `RateLimitService` as {@link rateLimitHandlers} answer it:
 * its response serializer takes a {@link DecisionResult} and writes Envoy's `RateLimitResponse`
 * directly ({@link encodeRateLimitResponse}).
 */
export function rateLimitServiceDefinition(): grpc.ServiceDefinition {
  const definition = loadRateLimitService().service;
  const method = definition.ShouldRateLimit!;
  return {
    ...definition,
    ShouldRateLimit: { ...method, responseSerialize: (result: DecisionResult) => encodeRateLimitResponse(result) },
  };
}

function metadataText(metadata: grpc.Metadata, name: string): string | undefined {
  const value = metadata.get(name)[0];
  return typeof value === 'string' ? value : undefined;
}

/**
 * addRateLimitService adds Envoy's `RateLimitService` over `service` to a gRPC server.
 *
 * @example
 * const server = new grpc.Server();
 * addRateLimitService(server, service);
 */
export function addRateLimitService(
  server: grpc.Server,
  service: RateLimitService,
  options: { readonly tracing?: boolean } = {},
): void {
  server.addService(rateLimitServiceDefinition(), rateLimitHandlers(service, options));
}

/**
 * rateLimitHandlers returns the gRPC handlers of `RateLimitService` over `service`; they answer
 * {@link DecisionResult}s, for the serializer of {@link rateLimitServiceDefinition}.
 */
export function rateLimitHandlers(
  service: RateLimitService,
  options: { readonly tracing?: boolean } = {},
): grpc.UntypedServiceImplementation {
  return {
    ShouldRateLimit(call: grpc.ServerUnaryCall<unknown, unknown>, callback: grpc.sendUnaryData<unknown>) {
      let request: DecisionRequest;
      try {
        request = parseDecisionRequest(call.request);
      } catch (error) {
        callback(grpcErrorOf(error));
        return;
      }
      const decided =
        options.tracing === true
          ? traced(
              request,
              (name) => metadataText(call.metadata, name),
              'grpc',
              () => service.shouldRateLimit(request),
            )
          : service.shouldRateLimit(request);
      decided.then(
        (result) => callback(null, result),
        (error: unknown) => callback(grpcErrorOf(error)),
      );
    },
  };
}
