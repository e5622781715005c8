import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { compilePath, patternCovers } from '../src/config/paths.js';
import { downstreamHeaders, upstreamHeaders } from '../src/gateway/forwarding.js';
import { readJwtClaim, signHs256, type JwtRejection } from '../src/gateway/jwt.js';
import { redactConfig } from '../src/ops/redact.js';
import { trustedPeers } from '../src/gateway/traffic.js';

describe('path patterns', () => {
  it('match literal paths, parameters and a final wildcard', () => {
    assert.deepEqual(compilePath('/users/:id').match('/users/42'), { id: '42' });
    assert.equal(compilePath('/users/:id').match('/users/'), undefined);
    assert.equal(compilePath('/users/:id').match('/users/42/x'), undefined);
    assert.deepEqual(compilePath('/users/:id/*').match('/users/a%20b/x/y'), { id: 'a b' });
    assert.deepEqual(compilePath('/api/*').match('/api'), {});
    assert.deepEqual(compilePath('/api/*').match('/api/v1/x'), {});
    assert.equal(compilePath('/api/*').match('/apix'), undefined);
    assert.deepEqual(compilePath('/*').match('/anything/at/all'), {});
    assert.deepEqual(compilePath('/health').match('/health'), {});
    assert.equal(compilePath('/health', { strictTrailingSlash: true }).match('/health/'), undefined);
    assert.deepEqual(compilePath('/health').match('/health/'), {}, 'by default a trailing slash is the same path');
  });

  it('know when an earlier pattern covers a later one', () => {
    assert.ok(patternCovers('/*', '/users/:id'));
    assert.ok(patternCovers('/users/:x', '/users/:id'));
    assert.ok(patternCovers('/users/:x', '/users/me'));
    assert.ok(!patternCovers('/users/me', '/users/:id'));
    assert.ok(!patternCovers('/users/:id', '/users/*'));
    assert.ok(!patternCovers('/a/*', '/b/*'));
  });
});

describe('forwarding headers', () => {
  const facts = { peer: '192.0.2.7', proto: 'http', trusted: false };
  /** The names of a flat field list, in order. */
  const names = (fields: readonly string[]): string[] => fields.filter((_, i) => i % 2 === 0);
  /** The one value of a field in a flat field list (failing when it is absent or repeated). */
  const value = (fields: readonly string[], name: string): string | undefined => {
    const values = fields.filter((_, i) => i % 2 === 1 && fields[i - 1] === name);
    assert.equal(values.length, 1, `${name} once in ${JSON.stringify(fields)}`);
    return values[0];
  };
  /** undici's raw fields: names and values as bytes. */
  const raw = (...fields: string[]): Buffer[] => fields.map((f) => Buffer.from(f, 'latin1'));

  it('drop hop-by-hop fields, those the Connection header names, and Host', () => {
    const out = upstreamHeaders(
      {
        host: 'gw',
        connection: 'keep-alive, X-Secret',
        'x-secret': '1',
        'keep-alive': 'timeout=5',
        te: 'trailers',
        'proxy-authorization': 'x',
        upgrade: 'h2c',
        accept: 'text/plain',
      },
      facts,
    );
    assert.deepEqual(names(out).sort(), [
      'accept',
      'forwarded',
      'x-forwarded-for',
      'x-forwarded-host',
      'x-forwarded-proto',
    ]);
  });

  it('start the forwarding fields afresh from an untrusted peer, so a client cannot forge them', () => {
    const out = upstreamHeaders(
      { host: 'example.com', 'x-forwarded-for': '10.0.0.1', forwarded: 'for=10.0.0.1', 'x-forwarded-proto': 'https' },
      facts,
    );
    assert.equal(value(out, 'x-forwarded-for'), '192.0.2.7');
    assert.equal(value(out, 'x-forwarded-proto'), 'http');
    assert.equal(value(out, 'x-forwarded-host'), 'example.com');
    assert.equal(value(out, 'forwarded'), 'for=192.0.2.7;host=example.com;proto=http');
  });

  it('drop a forged X-Forwarded-Host when the request names no host', () => {
    const out = upstreamHeaders({ 'x-forwarded-host': 'evil.example' }, facts);
    assert.deepEqual(names(out).sort(), ['forwarded', 'x-forwarded-for', 'x-forwarded-proto']);
  });

  it('append to the forwarding fields of a trusted peer, quoting IPv6 in Forwarded', () => {
    const out = upstreamHeaders(
      {
        host: 'example.com:8443',
        'x-forwarded-for': '10.0.0.1',
        forwarded: 'for=10.0.0.1',
        'x-forwarded-proto': 'https',
      },
      { peer: '2001:db8::1', proto: 'http', trusted: true },
    );
    assert.equal(value(out, 'x-forwarded-for'), '10.0.0.1, 2001:db8::1');
    assert.equal(value(out, 'x-forwarded-proto'), 'https');
    assert.equal(value(out, 'forwarded'), 'for=10.0.0.1, for="[2001:db8::1]";host="example.com:8443";proto=http');
  });

  it("name each request's own host in Forwarded, one connection's requests naming several hosts", () => {
    const hop = { peer: '192.0.2.8', proto: 'https', trusted: false };
    for (const host of ['a.example', 'a.example', 'b.example', undefined, 'a.example', 'bad host'])
      assert.equal(
        value(upstreamHeaders(host === undefined ? {} : { host }, hop), 'forwarded'),
        host === undefined || host === 'bad host'
          ? 'for=192.0.2.8;proto=https'
          : `for=192.0.2.8;host=${host};proto=https`,
      );
  });

  it('drop hop-by-hop fields of responses too, keeping repeated fields and names in lower case', () => {
    const out = downstreamHeaders(
      raw(
        'Connection',
        'close, x-hop',
        'X-Hop',
        '1',
        'Transfer-Encoding',
        'chunked',
        'Content-Type',
        'text/plain',
        'set-cookie',
        'a=1',
        'set-cookie',
        'b=2',
      ),
      [],
    );
    assert.deepEqual(out, ['content-type', 'text/plain', 'set-cookie', 'a=1', 'set-cookie', 'b=2']);
  });

  it("put the gateway's own fields in place of an upstream's of the same name, and pass values byte for byte", () => {
    const out = downstreamHeaders(raw('RateLimit', '"up";r=1;t=1', 'X-Name', '\u00c3\u00a9'), [
      ['ratelimit', '"gw";r=9;t=1'],
    ]);
    assert.deepEqual(out, ['x-name', '\u00c3\u00a9', 'ratelimit', '"gw";r=9;t=1']);
    assert.deepEqual([...Buffer.from(out[1]!, 'latin1')], [0xc3, 0xa9], 'the UTF-8 bytes of é, as received');
  });

  it('trust peers by hop count or by listed addresses and ranges', () => {
    assert.equal(trustedPeers(false)('127.0.0.1'), false);
    assert.equal(trustedPeers(1)('203.0.113.9'), true);
    const listed = trustedPeers(['10.0.0.0/8', '::1']);
    assert.equal(listed('10.1.2.3'), true);
    assert.equal(listed('::ffff:10.1.2.3'), true);
    assert.equal(listed('::1'), true);
    assert.equal(listed('192.0.2.1'), false);
  });
});

describe('JWT claims', () => {
  const secret = 'a-test-secret-long-enough';
  const nowMs = 1_700_000_000_000;
  const read = (token: string, verify = true): unknown =>
    readJwtClaim(token, { claim: 'sub', secret: verify ? secret : undefined, nowMs });
  const problem = (token: string, verify = true): unknown => {
    const r = read(token, verify);
    return typeof r === 'string' ? r : (r as JwtRejection).problem;
  };
  const part = (json: unknown): string => Buffer.from(JSON.stringify(json)).toString('base64url');

  it('read a claim unverified, or verified with the HS256 secret', () => {
    const token = signHs256({ sub: 'alice', exp: nowMs / 1000 + 60, nbf: nowMs / 1000 - 60 }, secret);
    assert.equal(read(token, false), 'alice');
    assert.equal(read(token), 'alice');
    assert.equal(read(signHs256({ sub: 42 }, secret)), '42');
  });

  it('say why a token is refused: signature, algorithm, expiry, not-before, claim, form', () => {
    assert.equal(problem(signHs256({ sub: 'alice' }, 'another-secret-entirely')), 'signature');
    assert.equal(problem(signHs256({ sub: 'alice', exp: nowMs / 1000 }, secret)), 'expired');
    assert.equal(problem(signHs256({ sub: 'alice', nbf: nowMs / 1000 + 1 }, secret)), 'premature');
    assert.equal(problem(signHs256({ sub: 'alice', exp: 'never' }, secret)), 'malformed');
    assert.equal(problem(signHs256({ uid: 'alice' }, secret)), 'claim');
    assert.equal(problem(signHs256({ sub: '' }, secret)), 'claim');
    const [, body, sig] = signHs256({ sub: 'alice' }, secret).split('.');
    assert.equal(problem(`${part({ alg: 'none' })}.${body}.${sig}`), 'algorithm');
    assert.equal(problem(`${part({ alg: 'HS512' })}.${body}.${sig}`), 'algorithm');
    assert.equal(problem('not.a.jwt', false), 'malformed');
    assert.equal(problem('x', false), 'malformed');
  });

  it('refuse alg none even unverified, where any other token is read as it says', () => {
    assert.equal(problem(`${part({ alg: 'none' })}.${part({ sub: 'alice' })}.`, false), 'algorithm');
    assert.equal(problem(`${part({ alg: 'NONE' })}.${part({ sub: 'alice' })}.`, false), 'algorithm');
    assert.equal(read(`${part({ alg: 'RS256' })}.${part({ sub: 'alice', exp: 1 })}.sig`, false), 'alice');
  });
});

describe('redaction', () => {
  it('hides tokens, secrets, passwords and URL passwords', () => {
    const out = redactConfig({
      admin: { token: 'abc', port: 1 },
      store: { url: 'redis://user:hunter2@host:1' },
      routes: [{ rules: [{ key: { secret: 's' } }] }],
    });
    assert.equal(JSON.stringify(out).includes('hunter2'), false);
    assert.deepEqual(out, {
      admin: { token: '[redacted]', port: 1 },
      store: { url: 'redis://user:[redacted]@host:1' },
      routes: [{ rules: [{ key: { secret: '[redacted]' } }] }],
    });
  });
});
