/**
 * The production docs and examples run the gateway as one process: never `npx floodgate serve`
 * (npx, npm's shell, then the gateway: a SIGTERM to npx leaves the gateway running, undrained).
 * The front README is left to its own rewrite.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../../../', import.meta.url));

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path) : [path];
  });
}

test('no doc or example serves through npx', () => {
  const files = [...filesUnder(join(ROOT, 'docs')), ...filesUnder(join(ROOT, 'examples'))].filter((f) =>
    /\.(md|ya?ml|service)$|Dockerfile$/.test(f),
  );
  assert.ok(files.length > 10);
  const found = files.filter((f) => /npx floodgate (serve|ratelimit)\b/.test(readFileSync(f, 'utf8')));
  assert.deepEqual(found, []);
});
