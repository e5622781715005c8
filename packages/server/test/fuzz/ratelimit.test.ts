/**
 * Fuzzing the rate limit service's decoding and handlers, called directly (support/fuzz.ts):
 * the request reader behind gRPC and the JSON API, gRPC's deserializer and ShouldRateLimit
 * handler, the JSON API's listener with any method, path, headers and body, the remote store's
 * and the reserve endpoint's readers, and `/v1/auth`'s header reader. Each answers within the
 * time limit with a valid answer or a DecisionError; the listener never answers 500.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import type * as grpc from '@grpc/grpc-js';
import fc from 'fast-check';
import { FloodgateError, ManualClock } from 'floodgate';
import {
  createRateLimitService,
  DecisionError,
  parseDecisionRequest,
  type RateLimitService,
} from '../../src/ratelimit/index.js';
import { readAuthRequest } from '../../src/ratelimit/service/auth-request.js';
import { rateLimitHandlers, rateLimitServiceDefinition } from '../../src/ratelimit/service/grpc.js';
import { rateLimitHttpHandler } from '../../src/ratelimit/service/http.js';
import { parseReserveRequest } from '../../src/ratelimit/service/reserve.js';
import { StoreApi } from '../../src/ratelimit/service/store-api.js';
import { fuzz, fuzzAsync } from '../../../floodgate/test/support/fuzz.js';
import {
  anyText,
  deepJsonText,
  deeplyNested,
  edgeNumber,
  hostileJson,
  hostileText,
} from '../../../floodgate/test/support/hostile.js';
import { runs } from '../../../floodgate/test/support/sweep.js';
import { domainsOf, START_MS } from '../ratelimit/support.js';
import { fakeRequest, fakeResponse } from './fake-http.js';

const FIXTURES = new URL('../ratelimit/fixtures/', import.meta.url).pathname;
const CONFIG = readFileSync(FIXTURES + 'readme-examples.yaml', 'utf8');

function service(): RateLimitService {
  return createRateLimitService({ domains: domainsOf(CONFIG), clock: new ManualClock(START_MS) });
}

const REQUEST_KEYS = [
  'domain',
  'descriptors',
  'entries',
  'key',
  'value',
  'hits_addend',
  'hitsAddend',
  'limit',
  'requests_per_unit',
  'requestsPerUnit',
  'unit',
  'mode',
  'op',
  'policy',
  'algorithm',
  'params',
  'cost',
  'requests',
  'limitId',
  'maxWaitMs',
];
const DOMAINS = domainsOf(CONFIG).map((d) => d.domain);

/** Requests of the right shape with values drawn from hostile ones, and the wrong shapes. */
const requestBody = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record(
      {
        domain: fc.oneof(fc.constantFrom(...DOMAINS), hostileText(3)),
        descriptors: fc.array(
          fc.record(
            {
              entries: fc.array(
                fc.record({
                  key: fc.oneof(fc.constantFrom('tenant', 'user', 'path', 'key'), hostileText(2)),
                  value: hostileText(3),
                }),
                { maxLength: 4 },
              ),
              hits_addend: edgeNumber,
              limit: hostileJson(['requests_per_unit', 'unit']),
            },
            { requiredKeys: ['entries'] },
          ),
          { maxLength: 4 },
        ),
        hits_addend: fc.oneof(edgeNumber, hostileText(1)),
        mode: fc.constantFrom('consume', 'peek', 'refund', 'other'),
      },
      { requiredKeys: ['domain', 'descriptors'] },
    ),
  },
  { weight: 3, arbitrary: hostileJson(REQUEST_KEYS) },
  {
    weight: 1,
    arbitrary: fc.integer({ min: 1, max: 2_000 }).map((depth) => deeplyNested({ key: 'k' }, depth, 'descriptors')),
  },
);

const isDecisionError = (error: unknown): boolean => error instanceof DecisionError;
const isTypedError = (error: unknown): boolean => error instanceof DecisionError || error instanceof FloodgateError;

describe('fuzzing the rate limit service', () => {
  it('parseDecisionRequest: a checked request or a DecisionError naming the field', () => {
    const input = fc.tuple(requestBody, fc.boolean());
    fuzz(
      'RLS request reader',
      input,
      ([body, strict]) => {
        const request = parseDecisionRequest(body, strict ? { strict: { alsoAllowed: ['mode'] } } : {});
        assert.ok(request.descriptors.length > 0 && Number.isSafeInteger(request.hitsAddend));
      },
      { runs: runs(3000), typed: isDecisionError },
    );
  });

  it('gRPC ShouldRateLimit: any bytes decode or fail, and the handler answers or fails with a status', async () => {
    const rls = service();
    const handlers = rateLimitHandlers(rls);
    const deserialize = rateLimitServiceDefinition().ShouldRateLimit!.requestDeserialize;
    const call = (request: unknown): Promise<void> =>
      new Promise((resolve, reject) => {
        const fakeCall = { request, metadata: { get: () => [] } } as unknown as grpc.ServerUnaryCall<unknown, unknown>;
        (handlers.ShouldRateLimit as grpc.handleUnaryCall<unknown, unknown>)(fakeCall, (error, value) => {
          if (error !== null && error !== undefined && (typeof error.code !== 'number' || error.code === 13))
            reject(new Error(`an internal error: ${JSON.stringify(error)}`));
          else if ((error === null || error === undefined) && value === undefined) reject(new Error('no answer'));
          else resolve();
        });
      });
    const serialize = rateLimitServiceDefinition().ShouldRateLimit!.requestSerialize;
    // Messages of the right kind, encoded by the proto library, then cut short or with bytes overwritten.
    const encoded = fc
      .tuple(requestBody, fc.array(fc.tuple(fc.nat(), fc.integer({ min: -1, max: 255 })), { maxLength: 4 }))
      .map(([body, edits]) => {
        let bytes: Buffer;
        try {
          bytes = Buffer.from(serialize(body));
        } catch {
          return Buffer.alloc(0);
        }
        for (const [at, byte] of edits) {
          if (bytes.length === 0) break;
          if (byte < 0) bytes = bytes.subarray(0, at % bytes.length);
          else bytes[at % bytes.length] = byte;
        }
        return bytes;
      });
    const bytes = fc.oneof(fc.uint8Array({ maxLength: 200 }), encoded);
    await fuzzAsync(
      'RLS gRPC ShouldRateLimit',
      fc.oneof(
        bytes.map((b) => ({ bytes: Buffer.from(b) })),
        requestBody.map((body) => ({ body })),
      ),
      async (input) => {
        let request: unknown;
        if ('bytes' in input) {
          try {
            request = deserialize(input.bytes);
          } catch {
            return; // grpc-js answers INTERNAL for a message that does not decode, before any handler.
          }
        } else request = input.body;
        await call(request);
      },
      { runs: runs(2000) },
    );
  });

  it('the JSON API: any method, path, headers and body are answered, never with 500', async () => {
    const rls = service();
    const handler = rateLimitHttpHandler(rls);
    const input = fc.record({
      method: fc.constantFrom('POST', 'GET', 'PUT', 'OPTIONS', 'post', ''),
      url: fc.oneof(
        fc.constantFrom('/json', '/v1/decide', '/v1/store', '/v1/reserve', '/v1/auth', '/healthcheck', '/json?x=1'),
        anyText(),
      ),
      headers: fc.dictionary(
        fc.oneof(
          fc.constantFrom('floodgate-domain', 'floodgate-descriptor-1', 'floodgate-descriptor-1-2', 'traceparent'),
          hostileText(2),
        ),
        hostileText(4),
        { maxKeys: 4 },
      ),
      body: fc.oneof(
        requestBody.map((b) => Buffer.from(JSON.stringify(b) ?? 'null')),
        anyText().map((t) => Buffer.from(t)),
        deepJsonText(40_000).map((t) => Buffer.from(t)),
        fc.integer({ min: 60_000, max: 70_000 }).map((n) => Buffer.alloc(n, 0x20)),
      ),
    });
    await fuzzAsync(
      'RLS JSON API (http handler)',
      input,
      async (parts) => {
        const { res, done } = fakeResponse();
        handler(fakeRequest(parts), res);
        const answer = await done;
        assert.ok(answer.status !== 500, `${answer.status} ${answer.body}`);
      },
      { runs: runs(2000) },
    );
  });

  it('the remote store (/v1/store): an answer or a typed error', async () => {
    const storeApi = new StoreApi(service());
    const policy = fc.oneof(
      fc.record({
        algorithm: fc.constantFrom('fixed-window', 'sliding-window', 'gcra', 'token-bucket', 'leaky-bucket', 'x'),
        params: hostileJson(['limit', 'windowMs', 'capacity', 'refillPerSecond', 'burst', 'periodMs', 'leakPerSecond']),
      }),
      hostileJson(['algorithm', 'params']),
    );
    const body = fc.oneof(
      fc.record({
        op: fc.constantFrom('consume', 'peek', 'refund', 'reset', 'consumeAll', 'other'),
        policy,
        key: fc.oneof(hostileText(3), edgeNumber),
        cost: edgeNumber,
        requests: fc.array(hostileJson(['policy', 'key', 'cost']), { maxLength: 4 }),
      }),
      hostileJson(REQUEST_KEYS),
    );
    await fuzzAsync('RLS remote store', body, (b) => storeApi.handle(b), { runs: runs(2000), typed: isTypedError });
  });

  it('the reserve endpoint (/v1/reserve): a checked request or a DecisionError', () => {
    fuzz('RLS reserve reader', hostileJson(REQUEST_KEYS), (b) => parseReserveRequest(b), {
      runs: runs(2000),
      typed: isDecisionError,
    });
  });

  it('/v1/auth headers: a request, none, invalid-value, or a DecisionError', () => {
    const headers = fc.dictionary(
      fc.oneof(
        fc.constantFrom(
          'floodgate-domain',
          'floodgate-descriptor-1',
          'floodgate-descriptor-2-1',
          'floodgate-descriptor-x',
        ),
        fc.tuple(fc.constantFrom('floodgate-descriptor-', 'floodgate-'), hostileText(2)).map(([a, b]) => a + b),
      ),
      fc.array(fc.oneof(hostileText(4), fc.constantFrom('tenant=a', 'user=b', '=x', 'k=')), { maxLength: 3 }),
      { maxKeys: 6 },
    );
    fuzz('RLS /v1/auth header reader', headers, (h) => readAuthRequest(h), {
      runs: runs(2000),
      typed: isDecisionError,
    });
  });
});
