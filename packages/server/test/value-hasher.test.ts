/** valueHasher: the remembered hashes are the HMACs themselves, whether a value is new, seen, long or past a clear. */
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { describe, it } from 'node:test';
import { valueHasher } from '../src/gateway/key-hash.js';

const hmac = (secret: string, value: string): string =>
  `#${createHmac('sha256', secret).update(value).digest('base64url').slice(0, 22)}`;

describe('valueHasher', () => {
  it('answers the keyed hash for new, repeated and long values, and after more values than it remembers', () => {
    const hide = valueHasher({ hash: true, secret: 's3cret' })!;
    const long = 'x'.repeat(65);
    for (const value of ['u1', 'u1', long, long, '']) assert.equal(hide(value), hmac('s3cret', value));
    for (let i = 0; i < 20_000; i++) assert.equal(hide(`user-${i}`), hmac('s3cret', `user-${i}`));
    assert.equal(hide('u1'), hmac('s3cret', 'u1'));
  });

  it('keeps each secret apart', () => {
    const a = valueHasher({ hash: true, secret: 'a' })!;
    const b = valueHasher({ hash: true, secret: 'b' })!;
    assert.equal(a('same'), hmac('a', 'same'));
    assert.equal(b('same'), hmac('b', 'same'));
    assert.notEqual(a('same'), b('same'));
  });

  it('is undefined when hashing is off', () => {
    assert.equal(valueHasher({ hash: false, secret: 'a' }), undefined);
  });
});
