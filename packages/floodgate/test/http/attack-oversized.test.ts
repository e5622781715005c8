/**
 * Attacks with inputs no HTTP server of ours lets through whole (node refuses headers over 16 KB,
 * and HTTP/1.1 cannot carry lone surrogates), driven straight into the gate: 1 MB forwarding
 * headers and identities, non-ASCII and lone surrogates.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  byFunction,
  byHeader,
  ClientIpResolver,
  HttpGate,
  type HttpLimitOptions,
  type Verdict,
} from '../../src/http/index.js';
import { fixedWindow, Limiter, ManualClock, MemoryStore } from '../../src/index.js';
import { FakeView, memoryLogger, type FakeRequest } from './support.js';

const MB = 1 << 20;

function gateOf(
  options: Partial<HttpLimitOptions<FakeRequest>>,
  store = new MemoryStore(),
): { check: (request: FakeRequest) => number; store: MemoryStore } {
  const limiter = new Limiter({
    policy: fixedWindow({ limit: 2, windowMs: 60_000 }),
    clock: new ManualClock(0),
    store,
  });
  const gate = new HttpGate<FakeRequest>({ limiter, logger: memoryLogger(), ...options });
  const resolver = new ClientIpResolver(options, memoryLogger());
  return {
    store,
    check: (request) => {
      const verdict = gate.check(new FakeView(resolver, request)) as Verdict;
      return verdict.allowed ? 200 : verdict.statusCode;
    },
  };
}

describe('attack: 1 MB headers and keys, straight into the gate', () => {
  it('a 1 MB X-Forwarded-For or Forwarded prefix is read from the right and moves nothing', () => {
    for (const [forwardedHeader, prefix] of [
      ['x-forwarded-for', `${'6.6.6.6, '.repeat(MB / 9)}`],
      ['forwarded', `for="${'\\"'.repeat(MB / 2)}`],
      ['forwarded', `${'for=6.6.6.6;proto="a,b", '.repeat(MB / 25)}`],
    ] as const) {
      const { check } = gateOf({ trustProxy: 1, forwardedHeader });
      const value = forwardedHeader === 'forwarded' ? `${prefix}, for=203.0.113.66` : `${prefix}203.0.113.66`;
      const got = [0, 1, 2].map(() => check({ remote: '10.0.0.1', headers: { [forwardedHeader]: value } }));
      assert.deepEqual(got, [200, 200, 429], forwardedHeader);
    }
  });

  it('a 1 MB identity is hashed into a bounded key of its own', () => {
    const { check, store } = gateOf({ key: byHeader('x-id') });
    const huge = 'x'.repeat(MB);
    assert.deepEqual(
      [
        check({ headers: { 'x-id': huge } }),
        check({ headers: { 'x-id': huge } }),
        check({ headers: { 'x-id': huge } }),
      ],
      [200, 200, 429],
    );
    assert.equal(check({ headers: { 'x-id': `${huge}y` } }), 200, 'one more character is another client');
    assert.equal(store.size, 2);
  });

  it('non-ASCII and lone surrogates keep distinct keys, and a throttled one stays throttled', () => {
    const { check } = gateOf({
      key: byFunction((req: { header(n: string): string | undefined }) => req.header('x-id')),
    });
    const ids = [
      '\uD800',
      '\uDC00',
      '\uD800\uDC00',
      '\u00e9',
      'e\u0301',
      '\uFFFD',
      `${'\uD83D'.repeat(300)}`,
      `${'\uD83D'.repeat(299)}\uDE00`,
    ];
    for (const id of ids)
      assert.deepEqual(
        [check({ headers: { 'x-id': id } }), check({ headers: { 'x-id': id } })],
        [200, 200],
        JSON.stringify(id),
      );
    for (const id of ids) assert.equal(check({ headers: { 'x-id': id } }), 429, JSON.stringify(id));
  });
});
