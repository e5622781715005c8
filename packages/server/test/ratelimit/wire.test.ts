import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ManualClock } from 'floodgate';
import {
  createRateLimitService,
  encodeRateLimitResponse,
  loadRateLimitService,
  parseDecisionRequest,
  toResponseMessage,
  type DecisionResult,
} from '../../src/ratelimit/index.js';
import { fixtureDomains, START_MS } from './support.js';

const method = loadRateLimitService().service.ShouldRateLimit!;

/** generic encodes `result` with protobufjs from the .proto files, then decodes; direct does the same from our bytes. */
function generic(result: DecisionResult): unknown {
  return method.responseDeserialize(method.responseSerialize(toResponseMessage(result)));
}
function direct(result: DecisionResult): unknown {
  return method.responseDeserialize(encodeRateLimitResponse(result));
}

describe('encodeRateLimitResponse', () => {
  it('writes what the generic encoder writes, for every kind of status', async () => {
    const clock = new ManualClock(START_MS + 1234);
    const service = createRateLimitService({
      domains: [...fixtureDomains('example.yaml'), ...fixtureDomains('readme-examples.yaml')],
      clock,
    });
    const requests = [
      {
        domain: 'rl',
        descriptors: [
          { entries: [{ key: 'foo', value: 'a' }] },
          {
            entries: [
              { key: 'foo', value: 'a' },
              { key: 'bar', value: 'banned' },
            ],
          },
          { entries: [{ key: 'qux', value: 'q' }] },
          { entries: [{ key: 'none', value: 'n' }] },
        ],
      },
      {
        domain: 'rl',
        descriptors: [
          {
            entries: [
              { key: 'foo', value: 'b' },
              { key: 'baz', value: 'shady' },
            ],
          },
        ],
      },
      {
        domain: 'example7',
        descriptors: [
          {
            entries: [
              { key: 'key_1', value: 'value_1' },
              { key: 'user', value: 'bkthomps' },
            ],
          },
        ],
      },
      {
        domain: 'mongo_cps',
        hits_addend: 4_000_000_000,
        descriptors: [{ entries: [{ key: 'database', value: 'users' }] }],
      },
      {
        domain: 'rl',
        descriptors: [
          { entries: [{ key: 'x', value: 'é✓' }], limit: { requests_per_unit: 4_294_967_295, unit: 'DAY' } },
        ],
      },
    ];
    for (let round = 0; round < 3; round++) {
      for (const r of requests) {
        const result = await service.shouldRateLimit(parseDecisionRequest(r));
        assert.deepEqual(direct(result), generic(result), JSON.stringify(r));
      }
    }
  });
});
