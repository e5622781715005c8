/**
 * Checks of an unpacked tarball, the ones arethetypeswrong makes written as plain functions: the
 * manifest points only at shipped files, every entry has ESM and CommonJS types first in its
 * conditions, node10 finds every subpath's types, and which packages each declaration reaches.
 */
import { access, readFile } from 'node:fs/promises';
import { dirname, join, posix } from 'node:path';

type Json = Record<string, unknown>;

const CONDITIONS = ['import', 'require'] as const;

async function exists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  );
}

function asObject(value: unknown): Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Json) : {};
}

/** checkEntry returns the problems of one `exports` entry (`name` is its subpath). */
async function checkEntry(packageDir: string, name: string, entry: Json): Promise<string[]> {
  const problems: string[] = [];
  for (const condition of CONDITIONS) {
    const target = asObject(entry[condition]);
    if (Object.keys(target)[0] !== 'types') problems.push(`${name}: "${condition}" must list "types" first`);
    for (const key of ['types', 'default']) {
      const file = target[key];
      if (typeof file !== 'string') problems.push(`${name}: no "${condition}.${key}"`);
      else if (!(await exists(join(packageDir, file))))
        problems.push(`${name}: ${condition}.${key} ${file} is not in the tarball`);
    }
  }
  return problems;
}

/** checkNode10 returns the problems of the fallbacks that node10 resolution reads instead of `exports`. */
async function checkNode10(packageDir: string, manifest: Json): Promise<string[]> {
  const problems: string[] = [];
  const exportsMap = asObject(manifest['exports']);
  for (const field of ['main', 'types']) {
    const file = manifest[field];
    if (typeof file !== 'string' || !(await exists(join(packageDir, file))))
      problems.push(`"${field}" is missing or not shipped`);
  }
  const mapped = asObject(asObject(manifest['typesVersions'])['*']);
  for (const subpath of Object.keys(exportsMap).filter((k) => k !== '.' && k !== './package.json')) {
    const expected = asObject(asObject(exportsMap[subpath])['require'])['types'];
    const got = mapped[subpath.slice(2)];
    if (!Array.isArray(got) || got[0] !== expected)
      problems.push(`typesVersions has no ${subpath} -> ${String(expected)}`);
  }
  return problems;
}

/**
 * checkManifest returns every problem with the unpacked package's manifest (empty: none): the
 * source condition, dev fields, metadata, export targets, node10 fallbacks, the CJS marker.
 */
export async function checkManifest(packageDir: string): Promise<string[]> {
  const text = await readFile(join(packageDir, 'package.json'), 'utf8');
  const manifest = JSON.parse(text) as Json;
  const problems: string[] = [];
  if (text.includes('floodgate-source')) problems.push('the floodgate-source condition is still there');
  for (const field of ['scripts', 'devDependencies']) if (field in manifest) problems.push(`"${field}" is still there`);
  if (manifest['license'] !== 'MIT') problems.push('license is not MIT');
  for (const field of ['repository', 'homepage', 'bugs', 'description', 'engines'])
    if (!(field in manifest)) problems.push(`no "${field}"`);
  if (!Array.isArray(manifest['keywords']) || manifest['keywords'].length === 0) problems.push('no keywords');
  const exportsMap = asObject(manifest['exports']);
  for (const [name, entry] of Object.entries(exportsMap)) {
    if (name !== './package.json') problems.push(...(await checkEntry(packageDir, name, asObject(entry))));
  }
  problems.push(...(await checkNode10(packageDir, manifest)));
  const marker = JSON.parse(await readFile(join(packageDir, 'dist/cjs/package.json'), 'utf8')) as Json;
  if (marker['type'] !== 'commonjs') problems.push('dist/cjs/package.json does not say "type": "commonjs"');
  return problems;
}

/** specifiersOf returns the module specifiers a declaration file imports, comments left out. */
export function specifiersOf(source: string): string[] {
  const code = source.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
  const found: string[] = [];
  for (const match of code.matchAll(/(?:\bfrom\s+|\bimport\s*\(\s*|^\s*import\s+)['"]([^'"]+)['"]/gm))
    found.push(match[1]!);
  return found;
}

/** isBare returns true for a package specifier (neither relative nor absolute). */
export function isBare(specifier: string): boolean {
  return !specifier.startsWith('.') && !specifier.startsWith('/');
}

/** isPackage returns true for a specifier naming an npm package (bare, and not a `node:` builtin). */
export function isPackage(specifier: string): boolean {
  return isBare(specifier) && !specifier.startsWith('node:');
}

/**
 * importGraph returns every bare specifier reached from `entry` (a .d.ts path under `root`),
 * following relative imports through their declaration files.
 */
export async function importGraph(root: string, entry: string): Promise<Set<string>> {
  const bare = new Set<string>();
  const seen = new Set<string>();
  const queue = [entry];
  for (let file = queue.pop(); file !== undefined; file = queue.pop()) {
    if (seen.has(file)) continue;
    seen.add(file);
    for (const specifier of specifiersOf(await readFile(join(root, file), 'utf8'))) {
      if (isBare(specifier)) bare.add(specifier);
      else queue.push(posix.normalize(posix.join(dirname(file), specifier.replace(/\.js$/, '.d.ts'))));
    }
  }
  return bare;
}
