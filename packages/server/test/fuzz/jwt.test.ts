/**
 * Fuzzing the JWT reader (gateway/jwt.ts, support/fuzz.ts): any token, claim name, secret and
 * time gives, within the time limit and without throwing, a non-empty claim or a rejection that
 * names its problem; tokens signed with the secret reach the payload's checks.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { readJwtClaim, signHs256 } from '../../src/gateway/jwt.js';
import { fuzz } from '../../../floodgate/test/support/fuzz.js';
import { anyText, edgeNumber, hostileJson, hostileText, objectOf } from '../../../floodgate/test/support/hostile.js';
import { runs } from '../../../floodgate/test/support/sweep.js';

const SECRET = 'fuzz-secret';
const PROBLEMS = ['malformed', 'algorithm', 'signature', 'expired', 'premature', 'claim'];
const CLAIMS = ['sub', 'tenant', 'exp', 'nbf', 'alg', '__proto__', 'constructor', 'toString', ''];

const base64url = (text: string): string => Buffer.from(text, 'utf8').toString('base64url');
const payload = fc
  .array(fc.tuple(fc.constantFrom(...CLAIMS), fc.oneof(hostileJson(CLAIMS), edgeNumber)), { maxLength: 6 })
  .map(objectOf);
const header = fc.oneof(
  fc.constantFrom({ alg: 'HS256', typ: 'JWT' }, { alg: 'none' }, { alg: 'NoNe' }, { alg: 'RS256' }, {}),
  hostileJson(['alg', 'typ', 'kid']),
);
const part = fc.oneof(
  hostileJson(['alg', 'sub', 'exp']).map((v) => base64url(JSON.stringify(v) ?? '')),
  hostileText(6),
  hostileText(6).map(base64url),
);
const token = fc.oneof(
  // Signed with the secret: the reader gets past the signature to the payload.
  payload.map((p) => signHs256(p, SECRET)),
  fc
    .tuple(header, payload, part)
    .map(([h, p, s]) => `${base64url(JSON.stringify(h))}.${base64url(JSON.stringify(p))}.${s}`),
  fc.array(part, { maxLength: 5 }).map((parts) => parts.join('.')),
  anyText(),
);

describe('fuzzing the JWT reader', () => {
  it('gives a non-empty claim or a rejection naming its problem', () => {
    const input = fc.tuple(
      token,
      fc.constantFrom(...CLAIMS),
      fc.constantFrom(SECRET, undefined),
      fc.oneof(fc.constant(1_800_000_000_000), edgeNumber),
    );
    fuzz(
      'JWT reader',
      input,
      ([t, claim, secret, nowMs]) => {
        const read = readJwtClaim(t, { claim, secret, nowMs });
        if (typeof read === 'string') assert.notEqual(read, '');
        else assert.ok(PROBLEMS.includes(read.problem), JSON.stringify(read));
      },
      { runs: runs(3000) },
    );
  });
});
