import assert from 'node:assert/strict';
import { isUtf8 } from 'node:buffer';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { MemoryStore } from 'floodgate';
import { parseConfig } from '../src/config/load.js';
import { compilePath, patternCovers } from '../src/config/paths.js';
import { escapesAreUtf8 } from '../src/config/utf8.js';
import { RouteTable } from '../src/gateway/routes.js';
import {
  AMBIGUITIES,
  ambiguityBit,
  ambiguitiesIn,
  describeAmbiguities,
  isNormalPath,
  normalPathEnd,
  normalizeTarget,
} from '../src/config/normal-path.js';
import { runs } from '../../floodgate/test/support/sweep.js';

/** Each row: a target as received, its normal path and query, and the ambiguities found. */
const TABLE: readonly (readonly [target: string, path: string, query: string | undefined, found: string])[] = [
  ['/', '/', undefined, ''],
  ['/api/login', '/api/login', undefined, ''],
  ['/api/login/', '/api/login/', undefined, ''],
  ['/api/login?next=/a//b', '/api/login', 'next=/a//b', ''],
  ['//api//login', '/api/login', undefined, ''],
  ['/./api/./login', '/api/login', undefined, ''],
  ['/api/x/../login', '/api/login', undefined, ''],
  ['/api/%6cogin', '/api/login', undefined, ''],
  ['/api/%6Cogin', '/api/login', undefined, ''],
  ['/%7euser/%41%2d%5f%2E', '/~user/A-_.', undefined, ''],
  ['/%2e%2e/%2E./api/login', '/api/login', undefined, 'aboveRoot'],
  ['/api/.%2e/api/login', '/api/login', undefined, ''],
  ['/a/b/..', '/a/', undefined, ''],
  ['/a/b/.', '/a/b/', undefined, ''],
  ['/a//', '/a/', undefined, ''],
  ['//', '/', undefined, ''],
  ['/..', '/', undefined, 'aboveRoot'],
  ['/../api/login', '/api/login', undefined, 'aboveRoot'],
  ['/api/login;x=1', '/api/login', undefined, 'pathParameter'],
  ['/api;v=2/login', '/api/login', undefined, 'pathParameter'],
  ['/api/..;/admin', '/admin', undefined, 'pathParameter'],
  ['/api%2flogin', '/api/login', undefined, 'encodedSlash'],
  ['/api%2Flogin', '/api/login', undefined, 'encodedSlash'],
  ['/api\\login', '/api/login', undefined, 'backslash'],
  ['/api%5clogin', '/api/login', undefined, 'backslash'],
  ['\\api\\login', '/api/login', undefined, 'backslash'],
  ['/api/login%00', '/api/login%00', undefined, 'controlCharacter'],
  ['/api/login%0a', '/api/login%0A', undefined, 'controlCharacter'],
  ['/api/%zzlogin', '/api/%25zzlogin', undefined, 'invalidEscape'],
  ['/api/login%', '/api/login%25', undefined, 'invalidEscape'],
  ['/api/login%4', '/api/login%254', undefined, 'invalidEscape'],
  ['/api/login#frag', '/api/login', undefined, 'fragment'],
  ['/api/login?a=1#frag', '/api/login', 'a=1', 'fragment'],
  ['/a%20b/%c3%a9', '/a%20b/%C3%A9', undefined, ''],
  ['/a b/é', '/a%20b/%E9', undefined, 'invalidUtf8'], // é alone is the latin-1 byte E9
  ['/a/\u20ac', '/a/%E2%82%AC', undefined, ''],
  ['/a/%3B/%3f/%23', '/a/%3B/%3F/%23', undefined, ''],
  ["/a/!$&'()*+,=:@", "/a/!$&'()*+,=:@", undefined, ''],
  ['/a/"<>`{}|^[]', '/a/%22%3C%3E%60%7B%7D%7C%5E%5B%5D', undefined, ''],
  ['/a%2F..%2F..%5C../b;c/%00', '/b/%00', undefined, 'encodedSlash,backslash,pathParameter,controlCharacter,aboveRoot'],
  ['/a..%c0%af..%c0%afetc', '/a..%C0%AF..%C0%AFetc', undefined, 'invalidUtf8'],
  ['/caf%E9', '/caf%E9', undefined, 'invalidUtf8'],
  ['/a/%C3', '/a/%C3', undefined, 'invalidUtf8'],
  ['/a/%C3/%A9', '/a/%C3/%A9', undefined, 'invalidUtf8'],
  ['/a/%ED%A0%80', '/a/%ED%A0%80', undefined, 'invalidUtf8'],
  ['/a/%F4%90%80%80', '/a/%F4%90%80%80', undefined, 'invalidUtf8'],
  ['/a/%F0%9F%98%80%e2%82%ac', '/a/%F0%9F%98%80%E2%82%AC', undefined, ''],
];

describe('path normal form', () => {
  it('normalises each spelling in the table and names its ambiguities', () => {
    for (const [target, path, query, found] of TABLE) {
      const n = normalizeTarget(target)!;
      assert.equal(n.path, path, target);
      assert.equal(n.query, query, target);
      assert.equal(ambiguitiesIn(n.ambiguities).join(','), found, target);
    }
  });

  it('has no normal form for a target that is not a path (absolute form, *)', () => {
    assert.equal(normalizeTarget('http://example.com/api'), undefined);
    assert.equal(normalizeTarget('*'), undefined);
    assert.equal(normalizeTarget(''), undefined);
    assert.equal(normalPathEnd('http://example.com/api'), -1);
  });

  it('finds a normal path by the fast check, and only a normal one', () => {
    for (const t of ['/', '/api/login', '/api/login/', '/a%20b', '/a/%C3%A9', "/a/!$&'()*+,=:@-._~"])
      assert.equal(isNormalPath(t), true, t);
    for (const t of ['', 'a', '//', '/a/.', '/a/..', '/./a', '/a;b', '/a%2fb', '/a%2Fb', '/a%6c', '/a%c3', '/a\\b'])
      assert.equal(isNormalPath(t), false, t);
    for (const t of ['/a%00', '/a%zz', '/a#b', '/a b', '/é', '/a..b/..', '/a%C0%AF', '/a%E9', '/a%C3/%A9', '/a%C3'])
      assert.equal(isNormalPath(t), false, t);
    assert.equal(isNormalPath('/a..b/...'), true, 'dots inside or beyond two are names, not dot segments');
    assert.equal(normalPathEnd('/api/login?x=1'), 10);
    assert.equal(normalPathEnd('/api/login/?x=1'), 11);
    assert.equal(normalPathEnd('/api/login?x=1#f'), -1, 'a fragment anywhere is not normal');
  });

  it('describes ambiguities in words with their config names', () => {
    const n = normalizeTarget('/a%2Fb;c')!;
    assert.equal(
      describeAmbiguities(n.ambiguities),
      'an encoded slash, %2F (encodedSlash); a ; path parameter (pathParameter)',
    );
    assert.equal(AMBIGUITIES.length, 8);
  });
});

/** Raw path pieces, weighted towards the spellings that matter. */
const piece = fc.oneof(
  fc.constantFrom(
    '/',
    '//',
    '.',
    '..',
    '/./',
    '/../',
    '%2e',
    '%2E%2e',
    '%2f',
    '%5C',
    '\\',
    ';',
    ';x=1',
    '%00',
    '%',
    '%z',
  ),
  fc.constantFrom('a', 'B', 'login', '%6c', '%41', '%20', '%c3%a9', '~', '-', '_', '!', '@', ':', '#', '?', 'é', ' '),
  fc.constantFrom('%C3', '%A9', '%e2%82', '%AC', '%C0%AF', '%F0%9F%98%80', '%E9'),
  fc.string({ maxLength: 4 }),
);
/** The ambiguities a normal path keeps: encoded control characters and bytes that are not UTF-8, kept encoded. */
const kept = (path: string): number =>
  (/%(?:[01][0-9A-F]|7F)/.test(path) ? ambiguityBit('controlCharacter') : 0) |
  (escapesAreUtf8(path) ? 0 : ambiguityBit('invalidUtf8'));
const target = fc.array(piece, { maxLength: 14 }).map((parts) => '/' + parts.join(''));

describe('path normal form, properties', () => {
  it('is idempotent: the normal form of a normal form is itself, ambiguous only by what it keeps encoded', () => {
    fc.assert(
      fc.property(target, (t) => {
        const once = normalizeTarget(t)!;
        const twice = normalizeTarget(once.path)!;
        assert.equal(twice.path, once.path);
        assert.equal(twice.ambiguities, kept(once.path));
      }),
      { numRuns: runs(3000) },
    );
  });

  it('passes the fast check (unless it keeps an ambiguity encoded), which agrees with normalizing', () => {
    fc.assert(
      fc.property(target, (t) => {
        const n = normalizeTarget(t)!;
        assert.equal(isNormalPath(n.path), kept(n.path) === 0, n.path);
        const path = t.split(/[?#]/)[0]!;
        if (isNormalPath(path)) assert.equal(n.path, path);
        if (normalPathEnd(t) >= 0) {
          assert.equal(n.ambiguities, 0);
          assert.equal(n.path, t.slice(0, normalPathEnd(t)));
        }
      }),
      { numRuns: runs(3000) },
    );
  });

  it('never climbs above the root: no dot segment, empty segment or raw backslash is left', () => {
    fc.assert(
      fc.property(target, (t) => {
        const { path } = normalizeTarget(t)!;
        assert.ok(path.startsWith('/'));
        const segments = path.split('/').slice(1, -1);
        for (const s of segments) assert.ok(s !== '' && s !== '.' && s !== '..', `${t} -> ${path}`);
        assert.ok(!/[\\;#?%](?![0-9A-F]{2})/.test(path), `${t} -> ${path}`);
      }),
      { numRuns: runs(3000) },
    );
  });

  it('reads every encoding of an unreserved character as the character', () => {
    const unreserved = fc.constantFrom(...'abcXYZ019-._~'.split(''));
    fc.assert(
      fc.property(
        fc.array(fc.tuple(unreserved, fc.boolean(), fc.boolean()), { minLength: 1, maxLength: 12 }),
        (chars) => {
          const plain = '/' + chars.map(([c]) => c).join('');
          const encoded =
            '/' +
            chars
              .map(([c, enc, lower]) => {
                if (!enc) return c;
                const hex = c.charCodeAt(0).toString(16);
                return '%' + (lower ? hex : hex.toUpperCase());
              })
              .join('');
          assert.equal(normalizeTarget(encoded)!.path, normalizeTarget(plain)!.path);
        },
      ),
      { numRuns: runs(2000) },
    );
  });
});

describe('path patterns on normal paths', () => {
  it('match regardless of case and trailing slash by default, as Express does', () => {
    const login = compilePath('/api/login');
    for (const p of ['/api/login', '/api/login/', '/API/login', '/api/Login', '/API/LOGIN/'])
      assert.deepEqual(login.match(p), {}, p);
    for (const p of ['/api/login//', '/api/logins', '/api/logi', '/api', '/api/login/x'])
      assert.equal(login.match(p), undefined, p);
    const users = compilePath('/Users/:id');
    assert.deepEqual(users.match('/users/AbC/'), { id: 'AbC' }, 'parameters keep their case');
    assert.equal(users.match('/users//'), undefined);
    const api = compilePath('/api/*');
    assert.deepEqual(api.match('/API'), {});
    assert.deepEqual(api.match('/Api/x/Y'), {});
    assert.equal(api.match('/apix'), undefined);
    assert.deepEqual(compilePath('/').match('/'), {});
    assert.equal(compilePath('/').match('/a'), undefined);
    assert.deepEqual(compilePath('/a/').match('/a'), {}, 'a pattern written with a slash matches without one');
  });

  it('match case and trailing slash exactly when the route says so', () => {
    const strict = compilePath('/api/login', { caseSensitive: true, strictTrailingSlash: true });
    assert.deepEqual(strict.match('/api/login'), {});
    for (const p of ['/api/login/', '/API/login', '/api/Login']) assert.equal(strict.match(p), undefined, p);
    const cased = compilePath('/api/*', { caseSensitive: true });
    assert.equal(cased.match('/API/x'), undefined);
    const param = compilePath('/users/:id', { strictTrailingSlash: true });
    assert.equal(param.match('/users/1/'), undefined);
    assert.deepEqual(param.match('/users/1'), { id: '1' });
  });

  it('fold ASCII letters only', () => {
    const p = compilePath('/a[');
    assert.equal(p.match('/a{'), undefined, '[ and { differ by the case bit but are not letters');
    assert.equal(compilePath('/ab').match('/a\u00c2'), undefined);
  });

  it('know when an earlier pattern covers a later one under each route’s case and slash rules', () => {
    assert.ok(patternCovers('/api/login', '/API/Login'));
    assert.ok(!patternCovers('/api/login', '/API/Login', { caseSensitive: true }, { caseSensitive: true }));
    assert.ok(!patternCovers('/api/login', '/api/login', { caseSensitive: true }, {}));
    assert.ok(patternCovers('/api/login', '/api/login', {}, { caseSensitive: true }));
    assert.ok(!patternCovers('/api/login', '/api/login', { strictTrailingSlash: true }, {}));
    assert.ok(patternCovers('/api/login/', '/api/login'));
    assert.ok(patternCovers('/*', '/api/login', { caseSensitive: true, strictTrailingSlash: true }, {}));
  });
});

describe('route hosts', () => {
  it('match a Host header in any case, with a port or the root’s final dot', () => {
    const yaml = 'routes:\n  - name: api\n    match: { host: api.example.com }\n    upstream: http://127.0.0.1:1\n';
    const table = RouteTable.build(parseConfig(yaml, 'hosts.yaml', {}), { store: new MemoryStore(), env: {} });
    for (const host of [
      'api.example.com',
      'API.Example.com',
      'api.example.com:8080',
      'api.example.com.',
      'api.example.com.:443',
    ])
      assert.equal(table.match(host, 'GET', '/')?.route.name, 'api', host);
    for (const host of ['api.example.com..', 'example.com', 'xapi.example.com', undefined])
      assert.equal(table.match(host, 'GET', '/'), undefined, String(host));
  });
});

describe('UTF-8 in escapes', () => {
  it('agrees with node’s decoder on every byte sequence of up to four escapes', () => {
    const bytes = fc.array(fc.integer({ min: 0x20, max: 0xff }), { minLength: 1, maxLength: 4 });
    fc.assert(
      fc.property(bytes, (seq) => {
        const path = '/' + seq.map((b) => '%' + b.toString(16).toUpperCase().padStart(2, '0')).join('');
        assert.equal(escapesAreUtf8(path), isUtf8(Buffer.from(seq)), path);
      }),
      { numRuns: runs(20_000) },
    );
  });
});
