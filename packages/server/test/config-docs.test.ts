/**
 * docs/gateway-config.md is what the schema says: the committed file equals what
 * `npm run docs:config -w floodgate-server` generates, and names every key the schema has.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { configDocs } from '../src/config/docs.js';
import { jsonSchema } from '../src/config/schema.js';

const committed = readFileSync(new URL('../../../docs/gateway-config.md', import.meta.url), 'utf8');

test('the committed config reference is the generated one (run npm run docs:config -w floodgate-server)', () => {
  assert.equal(committed, configDocs());
});

test('every top-level key and every listen.tls key has its row, with its default where it has one', () => {
  const root = jsonSchema() as { properties: Record<string, unknown> };
  for (const key of Object.keys(root.properties)) assert.ok(committed.includes(`## ${key}\n`), key);
  assert.match(
    committed,
    /\| `listen\.tls\.minVersion` \| string \| `"TLSv1\.2"` \| `TLSv1\.2`, `TLSv1\.3` \| The oldest TLS version/,
  );
  assert.match(committed, /\| `listen\.tls\.certFile` \(required\) \| string \|/);
  assert.match(committed, /`routes\[\]\.rules\[\]\.policy \(when algorithm: gcra\)\.rate` \(required\)/);
});
