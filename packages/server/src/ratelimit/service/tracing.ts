/**
 * Tracing of decisions through OpenTelemetry's API: a `ShouldRateLimit` span per request, a child
 * of the caller's trace when its `traceparent` (gRPC metadata or HTTP header) says so, with the
 * domain, the number of descriptors and the answer. Without an OpenTelemetry SDK registered in the
 * process (e.g. `NODE_OPTIONS=--import ./otel.mjs`) every call is a no-op.
 */
import { context, propagation, SpanKind, SpanStatusCode, trace, type TextMapGetter } from '@opentelemetry/api';
import type { DecisionRequest } from './request.js';
import type { DecisionResult } from './service.js';

const tracer = trace.getTracer('floodgate-ratelimit');

/** Carrier is what a request's trace context is read from: gRPC metadata or HTTP headers, as a lookup. */
export type Carrier = (name: string) => string | undefined;

const getter: TextMapGetter<Carrier> = {
  get: (carrier, key) => carrier(key),
  keys: () => ['traceparent', 'tracestate'],
};

/**
 * traced runs `decide` for `request` inside a `ShouldRateLimit` server span (a child of the trace
 * `carrier` names), recording the answer or the failure, and returns what `decide` returns.
 *
 * @example
 * const result = await traced(request, (name) => headers[name], 'http', () => service.shouldRateLimit(request));
 */
export async function traced(
  request: DecisionRequest,
  carrier: Carrier,
  transport: 'grpc' | 'http',
  decide: () => Promise<DecisionResult>,
): Promise<DecisionResult> {
  const parent = propagation.extract(context.active(), carrier, getter);
  const span = tracer.startSpan(
    'ShouldRateLimit',
    {
      kind: SpanKind.SERVER,
      attributes: {
        'ratelimit.domain': request.domain,
        'ratelimit.descriptors': request.descriptors.length,
        'rpc.system': transport === 'grpc' ? 'grpc' : 'http',
      },
    },
    parent,
  );
  try {
    const result = await context.with(trace.setSpan(parent, span), decide);
    span.setAttribute('ratelimit.overall_code', result.overallCode);
    return result;
  } catch (error) {
    span.recordException(error as Error);
    span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error).message });
    throw error;
  } finally {
    span.end();
  }
}
