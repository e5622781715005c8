/**
 * Fuzzing the gateway's request-target normaliser (config/normal-path.ts, support/fuzz.ts): any
 * target gives, within the time limit and without throwing, either no path (not origin-form) or
 * a normal path that normalises to itself, and the fast check agrees with the full one.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AMBIGUITIES, isNormalPath, normalPathEnd, normalizeTarget } from '../../src/config/normal-path.js';
import { fuzz } from '../../../floodgate/test/support/fuzz.js';
import { runs } from '../../../floodgate/test/support/sweep.js';
import { hostileTarget } from './path-inputs.js';

const ALL_AMBIGUITIES = (1 << AMBIGUITIES.length) - 1;

describe('fuzzing the path normaliser', () => {
  it('gives a normal path that is its own normal form, or none for a target not in origin form', () => {
    fuzz(
      'path normaliser',
      hostileTarget,
      (target) => {
        const normal = normalizeTarget(target);
        const originForm = target.startsWith('/') || target.startsWith('\\');
        assert.equal(normal !== undefined, originForm);
        if (normal === undefined) return;
        assert.ok(normal.path.startsWith('/'));
        assert.ok((normal.ambiguities & ~ALL_AMBIGUITIES) === 0);
        // Only ASCII leaves the normaliser: everything else is percent-encoded.
        assert.ok(!/[^\x21-\x7e]/.test(normal.path), normal.path);
        assert.equal(normalizeTarget(normal.path)!.path, normal.path);
        if (normal.ambiguities === 0) assert.ok(isNormalPath(normal.path), normal.path);
        const end = normalPathEnd(target);
        if (end >= 0) {
          assert.equal(normal.path, target.slice(0, end));
          assert.equal(normal.ambiguities, 0);
        }
      },
      { runs: runs(3000) },
    );
  });
});
