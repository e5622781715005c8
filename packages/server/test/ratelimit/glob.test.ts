import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { globMatches } from '../../src/ratelimit/index.js';
import { runs } from '../../../floodgate/test/support/sweep.js';

/** The same glob as a regular expression: the reference, fine on the short strings generated here. */
function byRegExp(pattern: string, text: string): boolean {
  const parts = pattern.split('*').map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
  return new RegExp(`^${parts.join('[\\s\\S]*')}$`).test(text);
}

describe('wildcard values (* anywhere, several times)', () => {
  it('agrees with the regular expression of the same glob', () => {
    const letters = fc.constantFrom('a', 'b', '_', '.');
    const text = fc.array(letters, { maxLength: 12 }).map((l) => l.join(''));
    const pattern = fc
      .array(fc.oneof(letters, fc.constant('*')), { maxLength: 8 })
      .map((l) => l.join(''))
      .filter((p) => p.includes('*'));
    fc.assert(
      fc.property(pattern, text, (p, t) => globMatches(p.split('*'), t) === byRegExp(p, t)),
      { numRuns: runs(5000) },
    );
  });

  it('known cases: prefix, suffix, middle, several, empty runs', () => {
    const m = (p: string, t: string) => globMatches(p.split('*'), t);
    assert.equal(m('path_/api/*', 'path_/api/'), true);
    assert.equal(m('host_*.example.com', 'host_www.example.com'), true);
    assert.equal(m('host_*.example.com', 'host_example.com'), false);
    assert.equal(m('p_/users/*/avatar', 'p_/users/42/avatar'), true);
    assert.equal(m('p_*/v*/export*', 'p_/a/v1/export.csv'), true);
    assert.equal(m('p_a*a', 'p_a'), false, 'the prefix and the suffix may not overlap');
    assert.equal(m('k_**', 'k_'), true);
  });

  it("a client's long value against a pattern of many * is answered (no backtracking blow-up)", () => {
    const pattern = `k_${'*a'.repeat(12)}*b`;
    assert.equal(globMatches(pattern.split('*'), `k_${'a'.repeat(1024)}`), false);
    assert.equal(globMatches(pattern.split('*'), `k_${'a'.repeat(1024)}b`), true);
  });
});
