import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { MemoryStore } from 'floodgate';
import { parseConfig } from '../src/config/load.js';
import { ambiguityBit } from '../src/config/normal-path.js';
import { RouteTable } from '../src/gateway/routes.js';

const PAGE = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'docs', 'gateway-requests.md');

describe('docs/gateway-requests.md', () => {
  const page = readFileSync(PAGE, 'utf8');
  const blocks = [...page.matchAll(/```yaml\n([^]*?)```/g)].map((m) => m[1]!);

  it('every config shown loads as written, and means what the page says', () => {
    assert.equal(blocks.length, 2);
    const env = { JWT_SECRET: 'a-secret-of-sixteen-or-more' };
    const [paths, identities] = blocks.map((yaml, i) => parseConfig(yaml, `gateway-requests.md block ${i + 1}`, env));
    const table = RouteTable.build(paths!, { store: new MemoryStore(), env });
    const files = table.routes[1]!;
    assert.equal(files.rejectAmbiguities & ambiguityBit('encodedSlash'), 0);
    assert.notEqual(files.rejectAmbiguities & ambiguityBit('backslash'), 0);
    for (const spelling of ['/API/login', '/api/login/', '//api/./login', '/api/%6cogin']) {
      const found = table.find(undefined, 'POST', spelling);
      assert.ok(found !== undefined && 'route' in found && found.route?.name === 'login', spelling);
    }
    const keys = identities!.routes[0]!.rules.map((r) => r.key);
    assert.deepEqual(
      keys.map((k) => [('onAbsent' in k && k.onAbsent) || '', ('onInvalid' in k && k.onInvalid) || '']),
      [
        ['refuse', ''],
        ['fallback', 'refuse'],
        ['skip', 'refuse'],
      ],
    );
  });

  it('names every ambiguity kind and key option the schema has', () => {
    for (const kind of [
      'encodedSlash',
      'backslash',
      'pathParameter',
      'controlCharacter',
      'invalidEscape',
      'aboveRoot',
      'fragment',
      'invalidUtf8',
    ])
      assert.ok(page.includes(`| \`${kind}\` |`), kind);
    for (const word of [
      'onAbsent',
      'onInvalid',
      'caseSensitive',
      'strictTrailingSlash',
      'paths.ambiguous',
      'match.ambiguous',
    ])
      assert.ok(page.includes(word), word);
  });
});
