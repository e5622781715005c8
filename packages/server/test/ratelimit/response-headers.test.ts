import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ManualClock } from 'floodgate';
import {
  createRateLimitService,
  ENVOY_HEADERS,
  parseDecisionRequest,
  X_RATELIMIT_HEADERS,
  type ResponseHeaders,
} from '../../src/ratelimit/index.js';
import { headersOf } from '../../src/cli/ratelimit.js';
import { domainsOf, START_MS } from './support.js';

const CONFIG = [
  'domain: h',
  'descriptors:',
  '  - key: user',
  '    rate_limit: { unit: minute, requests_per_unit: 10 }',
  '  - key: ip',
  '    rate_limit: { unit: second, requests_per_unit: 2 }',
  '  - key: free',
  '',
].join('\n');

async function headersFor(config: ResponseHeaders | undefined, hitsOnIp = 1): Promise<Array<[string, string]>> {
  const service = createRateLimitService({
    domains: domainsOf(CONFIG),
    clock: new ManualClock(START_MS + 400),
    ...(config === undefined ? {} : { responseHeaders: config }),
  });
  const request = (hits: number) =>
    parseDecisionRequest({
      domain: 'h',
      descriptors: [
        { entries: [{ key: 'free', value: 'x' }] },
        { entries: [{ key: 'user', value: 'u' }] },
        { entries: [{ key: 'ip', value: '1' }], hits_addend: hits },
      ],
    });
  return [...(await service.shouldRateLimit(request(hitsOnIp))).headers].map(([k, v]) => [k, v]);
}

describe('response headers, as configured', () => {
  it('draft (default): RateLimit-Policy and RateLimit, one member per limited descriptor', async () => {
    const headers = new Map(await headersFor(undefined));
    assert.deepEqual([...headers.keys()], ['ratelimit-policy', 'ratelimit']);
    assert.match(headers.get('ratelimit')!, /"d1";r=9;t=\d+, "d2";r=1;t=1/);
  });

  it('off: none', async () => {
    assert.deepEqual(await headersFor({ mode: 'off' }), []);
  });

  it("envoyproxy/ratelimit's three fields of the descriptor with the fewest hits left, under either set of names", async () => {
    // ip: 2 per second, 1 hit, 0.4 s into the second: 1 left, reset in 1 s (0.6 s rounded up, as Go's whole seconds).
    assert.deepEqual(await headersFor(ENVOY_HEADERS), [
      ['RateLimit-Limit', '2'],
      ['RateLimit-Remaining', '1'],
      ['RateLimit-Reset', '1'],
    ]);
    assert.deepEqual(await headersFor(X_RATELIMIT_HEADERS, 2), [
      ['X-RateLimit-Limit', '2'],
      ['X-RateLimit-Remaining', '0'],
      ['X-RateLimit-Reset', '1'],
    ]);
  });

  it('--response-headers takes the modes by name or three field names, and names a bad value', () => {
    assert.deepEqual(headersOf('x-ratelimit'), X_RATELIMIT_HEADERS);
    assert.deepEqual(headersOf('OFF'), { mode: 'off' });
    assert.deepEqual(headersOf('L, R, T'), { mode: 'limit-remaining-reset', limit: 'L', remaining: 'R', reset: 'T' });
    assert.throws(() => headersOf('sometimes'), /--response-headers must be draft, off, ratelimit, x-ratelimit/);
    assert.throws(() => headersOf('A,B'), /three field names/);
  });
});
