/**
 * The documentation stays true to the code: the error-code page lists exactly the codes of
 * `FloodgateErrorCode`, each with its meaning, causes and fix, and every relative link in the
 * package README, the examples' README and docs/ points at a file that exists.
 */
import assert from 'node:assert/strict';
import { access, readdir, readFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../../../', import.meta.url));
const ERRORS_TS = join(ROOT, 'packages/floodgate/src/core/errors.ts');
const ERRORS_MD = join(ROOT, 'docs/errors.md');

/** codesInSource returns the members of the `FloodgateErrorCode` union, in order. */
function codesInSource(source: string): string[] {
  const union = /export type FloodgateErrorCode =([^;]*);/.exec(source);
  assert.ok(union, 'errors.ts declares FloodgateErrorCode');
  return [...union[1]!.matchAll(/'([A-Z_]+)'/g)].map((m) => m[1]!);
}

/** sectionsOf returns each `## \`CODE\`` section of the page, by code. */
function sectionsOf(page: string): Map<string, string> {
  const sections = new Map<string, string>();
  const parts = page.split(/^## `([A-Z_]+)`$/m);
  for (let i = 1; i < parts.length; i += 2) sections.set(parts[i]!, parts[i + 1]!);
  return sections;
}

describe('docs/errors.md', () => {
  it('lists exactly the codes of FloodgateErrorCode, in the same order', async () => {
    const codes = codesInSource(await readFile(ERRORS_TS, 'utf8'));
    assert.ok(codes.length >= 10, `found ${codes.length} codes`);
    assert.deepEqual([...sectionsOf(await readFile(ERRORS_MD, 'utf8')).keys()], codes);
  });

  it('gives every code its meaning, typical causes and fix', async () => {
    for (const [code, text] of sectionsOf(await readFile(ERRORS_MD, 'utf8'))) {
      for (const part of ['**Meaning:**', '**Typical causes:**', '**Fix:**'])
        assert.ok(text.includes(part), `${code} has ${part}`);
    }
  });
});

describe('links in the READMEs and docs', () => {
  it('point at files that exist', async () => {
    const pages = [
      join(ROOT, 'packages/floodgate/README.md'),
      join(ROOT, 'examples/README.md'),
      ...(await readdir(join(ROOT, 'docs'))).filter((f) => f.endsWith('.md')).map((f) => join(ROOT, 'docs', f)),
    ];
    const broken: string[] = [];
    for (const page of pages) {
      const text = await readFile(page, 'utf8');
      for (const [, target] of text.matchAll(/\]\(([^)#\s]+)(?:#[^)]*)?\)/g)) {
        if (/^[a-z]+:/.test(target!)) continue;
        await access(resolve(dirname(page), target!)).catch(() => broken.push(`${page}: ${target}`));
      }
    }
    assert.deepEqual(broken, []);
  });
});
