/**
 * Builds floodgate for publishing: an ES module build (`dist/esm`) and a CommonJS build
 * (`dist/cjs`, marked by its own `{"type":"commonjs"}` package.json), each with its own
 * declarations, and no source maps (the tarball ships no sources for them to point at).
 *
 * The workspace's package.json carries a `floodgate-source` export condition pointing at `src`,
 * for development. The tarball must not, so packing goes through a staged copy: the build, the
 * README, LICENSE and CHANGELOG, and a package.json without that condition, scripts or dev-only
 * fields. `npm pack` in the package folder itself is refused (see `refuse-unstaged.mjs`).
 *
 *   node --import tsx scripts/build.ts            # builds into dist/
 *   node --import tsx scripts/build.ts --pack     # stages a copy and packs it into the cwd
 */
import { execFile } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** PACKAGE_DIR is the absolute path of packages/floodgate. */
export const PACKAGE_DIR = resolve(fileURLToPath(new URL('..', import.meta.url)));

/** SOURCE_CONDITION is the workspace-only export condition that the tarball must not carry. */
export const SOURCE_CONDITION = 'floodgate-source';

/** The files besides `dist` that the tarball carries, copied from the package folder. */
const DOC_FILES = ['README.md', 'LICENSE', 'CHANGELOG.md'] as const;

/** Fields of the workspace manifest that mean nothing to a user of the tarball. */
const DEV_FIELDS = ['scripts', 'devDependencies', 'private'] as const;

type Manifest = Record<string, unknown>;

async function tsc(project: string, outDir: string): Promise<void> {
  const tscBin = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  try {
    await run(process.execPath, [tscBin, '-p', join(PACKAGE_DIR, project), '--outDir', outDir], { cwd: PACKAGE_DIR });
  } catch (error) {
    const out = (error as { stdout?: string }).stdout ?? '';
    throw new Error(`tsc -p ${project} failed:\n${out}`, { cause: error });
  }
}

/**
 * buildDist compiles the library into `distDir/esm` and `distDir/cjs` (both builds run at once)
 * and returns `distDir`. It rejects with tsc's diagnostics when either build has errors.
 */
export async function buildDist(distDir: string): Promise<string> {
  await Promise.all(['esm', 'cjs'].map((build) => rm(join(distDir, build), { recursive: true, force: true })));
  await Promise.all([tsc('tsconfig.build.json', join(distDir, 'esm')), tsc('tsconfig.cjs.json', join(distDir, 'cjs'))]);
  await writeFile(join(distDir, 'cjs', 'package.json'), '{\n  "type": "commonjs"\n}\n');
  return distDir;
}

/** withoutSourceCondition returns a copy of an `exports` value with every `floodgate-source` key removed. */
export function withoutSourceCondition(value: unknown): unknown {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return value;
  const out: Record<string, unknown> = {};
  for (const [key, inner] of Object.entries(value)) {
    if (key !== SOURCE_CONDITION) out[key] = withoutSourceCondition(inner);
  }
  return out;
}

/** publishedManifest returns the package.json the tarball carries, made from the workspace's own. */
export function publishedManifest(workspace: Manifest): Manifest {
  const manifest: Manifest = { ...workspace, exports: withoutSourceCondition(workspace['exports']) };
  for (const field of DEV_FIELDS) delete manifest[field];
  return manifest;
}

/**
 * stagePackage builds the library into `stageDir` and lays out beside it exactly what the tarball
 * carries; it returns `stageDir`.
 */
export async function stagePackage(stageDir: string): Promise<string> {
  await mkdir(stageDir, { recursive: true });
  const workspace = JSON.parse(await readFile(join(PACKAGE_DIR, 'package.json'), 'utf8')) as Manifest;
  await buildDist(join(stageDir, 'dist'));
  await writeFile(join(stageDir, 'package.json'), `${JSON.stringify(publishedManifest(workspace), null, 2)}\n`);
  await Promise.all(DOC_FILES.map((file) => copyFile(join(PACKAGE_DIR, file), join(stageDir, file))));
  return stageDir;
}

/**
 * packStaged lays a package out with `stage` in a fresh temporary folder, runs `npm pack` there and
 * returns the tarball's absolute path in `destination`; the temporary folder is removed after.
 * Every package of the workspace packs this way, never from its own folder.
 */
export async function packStaged(stage: (stageDir: string) => Promise<unknown>, destination: string): Promise<string> {
  const stageDir = await mkdtemp(join(tmpdir(), 'floodgate-stage-'));
  try {
    await stage(stageDir);
    const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', destination], { cwd: stageDir });
    const [packed] = JSON.parse(stdout) as { filename: string }[];
    if (packed === undefined) throw new Error(`npm pack printed no tarball: ${stdout}`);
    return join(destination, packed.filename);
  } finally {
    await rm(stageDir, { recursive: true, force: true });
  }
}

/**
 * packTarball stages the package in a fresh temporary folder, runs `npm pack` there, and returns
 * the tarball's absolute path in `destination`. It never touches the package folder.
 */
export function packTarball(destination: string): Promise<string> {
  return packStaged(stagePackage, destination);
}

async function main(): Promise<void> {
  if (process.argv.includes('--pack')) {
    console.log(await packTarball(process.cwd()));
  } else {
    console.log(await buildDist(join(PACKAGE_DIR, 'dist')));
  }
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exitCode = 1;
  });
}
