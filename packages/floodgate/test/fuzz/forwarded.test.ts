/**
 * Fuzzing the readers of `Forwarded` and `X-Forwarded-For` (support/fuzz.ts): with any header
 * value, peer address and trust setting they return within the time limit, never throw, and name
 * a canonical address, an obfuscated identifier or `unknown`.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { ClientIpResolver, type TrustProxyOptions } from '../../src/http/index.js';
import { forwardedNodes, xForwardedForNodes, UNKNOWN_NODE } from '../../src/http/forwarded.js';
import { formatIp, parseIp } from '../../src/http/ip.js';
import { fuzz } from '../support/fuzz.js';
import { anyText, hostileText } from '../support/hostile.js';
import { runs } from '../support/sweep.js';

/** Pieces of forwarding headers, well formed and not, glued together with hostile text. */
const headerPiece = fc.oneof(
  fc.constantFrom('for=', 'For=', 'by=', 'proto=https', 'host="a,b"', ';', ',', ', ', '"', '\\"', '\\'),
  fc.constantFrom('192.0.2.1', '"[2001:db8::1]:443"', '[::1]', '10.0.0.1:8080', '_hidden', 'unknown', '01.2.3.4'),
  hostileText(3),
);
const headerValue = fc.oneof(
  { weight: 4, arbitrary: fc.array(headerPiece, { maxLength: 40 }).map((p) => p.join('')) },
  { weight: 1, arbitrary: anyText() },
);
const peer = fc.option(fc.oneof(fc.constantFrom('10.0.0.1', '::ffff:10.0.0.1', '::1', '192.0.2.9'), hostileText(4)), {
  nil: undefined,
});
const trust: fc.Arbitrary<TrustProxyOptions> = fc.record({
  trustProxy: fc.oneof(
    fc.constant(false as const),
    fc.integer({ min: 0, max: 40 }),
    fc.constant(['10.0.0.0/8', '::1/128', '192.0.2.0/24']),
  ),
  forwardedHeader: fc.constantFrom('x-forwarded-for' as const, 'forwarded' as const),
});

/** A node as the readers return them: a canonical address, an obfuscated identifier, or `unknown`. */
function assertNode(node: string): void {
  if (node === UNKNOWN_NODE || /^_[A-Za-z0-9._-]+$/.test(node)) return;
  const ip = parseIp(node);
  assert.ok(ip !== undefined && formatIp(ip) === node, `not a canonical address: ${JSON.stringify(node)}`);
}

describe('fuzzing the forwarding headers', () => {
  it('Forwarded: at most `count` nodes, each an address, an obfuscated identifier or unknown', () => {
    const input = fc.tuple(headerValue, fc.integer({ min: 0, max: 40 }));
    fuzz(
      'Forwarded reader',
      input,
      ([value, count]) => {
        const nodes = forwardedNodes(value, count);
        assert.ok(nodes.length <= count);
        nodes.forEach(assertNode);
      },
      { runs: runs(3000) },
    );
  });

  it('X-Forwarded-For: at most `count` nodes, each an address or unknown', () => {
    const input = fc.tuple(headerValue, fc.integer({ min: 0, max: 40 }));
    fuzz(
      'X-Forwarded-For reader',
      input,
      ([value, count]) => {
        const nodes = xForwardedForNodes(value, count);
        assert.ok(nodes.length <= count);
        for (const node of nodes) assert.ok(node === UNKNOWN_NODE || formatIp(parseIp(node)!) === node, node);
      },
      { runs: runs(3000) },
    );
  });

  it('the client address: whatever the peer, header and trust, a node as the readers give', () => {
    const input = fc.tuple(trust, peer, headerValue, headerValue);
    const logger = { warn: (): void => undefined };
    fuzz(
      'client address',
      input,
      ([options, remote, xff, forwarded]) => {
        const resolver = new ClientIpResolver(options, logger);
        const headers = { 'x-forwarded-for': xff, forwarded };
        const client = resolver.resolve(remote, { header: (name) => headers[name as keyof typeof headers] });
        assertNode(client);
      },
      { runs: runs(3000) },
    );
  });
});
