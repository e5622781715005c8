/**
 * Tracing: with `tracing: true`, each ShouldRateLimit (gRPC and POST /json) is one OpenTelemetry
 * server span with the domain, the number of descriptors and the answer, or the failure. The spans
 * are recorded by a tracer provider registered through OpenTelemetry's own API, as an SDK would be.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  trace,
  SpanKind,
  SpanStatusCode,
  type Attributes,
  type AttributeValue,
  type Span,
  type SpanOptions,
  type SpanStatus,
  type Tracer,
  type TracerProvider,
} from '@opentelemetry/api';
import { ManualClock, type Store } from 'floodgate';
import { createRateLimitService, startRateLimitServers, type RateLimitServers } from '../../src/ratelimit/index.js';
import { domainsOf, GrpcRls, postJson, rl, START_MS } from './support.js';

interface Recorded {
  readonly name: string;
  readonly kind: SpanKind | undefined;
  readonly attributes: Record<string, AttributeValue | undefined>;
  status: SpanStatus | undefined;
  ended: boolean;
}

/** A tracer provider that keeps every span it is given, for the test to read. */
class RecordingProvider implements TracerProvider {
  readonly spans: Recorded[] = [];
  getTracer(): Tracer {
    const startSpan = (name: string, options?: SpanOptions): Span => {
      const recorded: Recorded = {
        name,
        kind: options?.kind,
        attributes: { ...options?.attributes },
        status: undefined,
        ended: false,
      };
      this.spans.push(recorded);
      const span: Span = {
        spanContext: () => ({ traceId: '0'.repeat(31) + '1', spanId: '0'.repeat(15) + '1', traceFlags: 1 }),
        setAttribute: (key: string, value: AttributeValue) => ((recorded.attributes[key] = value), span),
        setAttributes: (attributes: Attributes) => (Object.assign(recorded.attributes, attributes), span),
        addEvent: () => span,
        addLink: () => span,
        addLinks: () => span,
        setStatus: (status: SpanStatus) => ((recorded.status = status), span),
        updateName: () => span,
        end: () => void (recorded.ended = true),
        isRecording: () => true,
        recordException: () => undefined,
      };
      return span;
    };
    return { startSpan, startActiveSpan: (() => assert.fail('not used')) as Tracer['startActiveSpan'] };
  }
}

const brokenStore: Store = {
  bind: () => ({
    synchronous: false,
    consume: () => Promise.reject(new Error('connection refused')),
    peek: () => Promise.reject(new Error('connection refused')),
    refund: () => Promise.reject(new Error('connection refused')),
    reset: () => Promise.reject(new Error('connection refused')),
  }),
};

describe('tracing of ShouldRateLimit', () => {
  const provider = new RecordingProvider();
  const domains = domainsOf(
    'domain: t\ndescriptors:\n  - key: k\n    rate_limit: { unit: hour, requests_per_unit: 1 }\n',
  );
  let servers: RateLimitServers;
  let broken: RateLimitServers;
  let untraced: RateLimitServers;
  before(async () => {
    trace.setGlobalTracerProvider(provider);
    const clock = new ManualClock(START_MS);
    servers = await startRateLimitServers({
      service: createRateLimitService({ domains, clock }),
      grpcPort: 0,
      httpPort: 0,
      tracing: true,
    });
    broken = await startRateLimitServers({
      service: createRateLimitService({ domains, clock, store: brokenStore }),
      grpcPort: 0,
      tracing: true,
    });
    untraced = await startRateLimitServers({ service: createRateLimitService({ domains, clock }), grpcPort: 0 });
  });
  after(async () => {
    await Promise.all([servers.close(), broken.close(), untraced.close()]);
    trace.disable();
  });

  it('a span per request over gRPC and JSON, with the domain, the descriptors and the answer', async () => {
    const client = new GrpcRls(servers.grpcPort!);
    try {
      await client.call(rl('t', [[['k', 'a']], [['k', 'b']]]));
      await client.call(rl('t', [[['k', 'a']]]));
    } finally {
      client.close();
    }
    await postJson(servers.httpPort!, '/json', { domain: 't', descriptors: [{ entries: [{ key: 'k', value: 'c' }] }] });
    assert.deepEqual(
      provider.spans.map((s) => [
        s.name,
        s.kind,
        s.attributes['ratelimit.domain'],
        s.attributes['ratelimit.descriptors'],
        s.attributes['ratelimit.overall_code'],
        s.attributes['rpc.system'],
        s.ended,
      ]),
      [
        ['ShouldRateLimit', SpanKind.SERVER, 't', 2, 'OK', 'grpc', true],
        ['ShouldRateLimit', SpanKind.SERVER, 't', 1, 'OVER_LIMIT', 'grpc', true],
        ['ShouldRateLimit', SpanKind.SERVER, 't', 1, 'OK', 'http', true],
      ],
    );
  });

  it('a store failure ends the span with an error; without tracing no span is made', async () => {
    provider.spans.length = 0;
    for (const port of [broken.grpcPort!, untraced.grpcPort!]) {
      const client = new GrpcRls(port);
      try {
        await client.call(rl('t', [[['k', 'z']]])).catch(() => undefined);
      } finally {
        client.close();
      }
    }
    assert.equal(provider.spans.length, 1);
    assert.equal(provider.spans[0]!.status?.code, SpanStatusCode.ERROR);
    assert.match(provider.spans[0]!.status?.message ?? '', /the store could not decide/);
    assert.equal(provider.spans[0]!.ended, true);
  });
});
