/**
 * Builds and packs a workspace package that ships ES modules only (the simulator, and the server
 * beside it): `dist/` from `src/` by `tsconfig.build.json`, then a staged copy with a clean
 * package.json packed by `npm pack`, the way the library packs itself (its `publishedManifest`
 * drops the `floodgate-source` condition, scripts, dev dependencies and `private`).
 *
 * The build emits without type-checking (`noCheck`): `npm run typecheck` checks the same files
 * under the same options, and `isolatedModules` with `verbatimModuleSyntax` make each file's output
 * independent of the others' types. So the build needs no other package built first: imports of
 * `floodgate` resolve to its sources for declarations and stay bare imports in the output.
 */
import { execFile } from 'node:child_process';
import { cp, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { packStaged, publishedManifest } from '../../floodgate/scripts/build.js';

const run = promisify(execFile);

/** Packager says what one package is made of. */
export interface Packager {
  /** The package's folder in the workspace. */
  readonly packageDir: string;
  /** Files and folders besides `dist` that the tarball carries, relative to `packageDir`. */
  readonly shipped: readonly string[];
  /** Files copied in from elsewhere, by their name in the tarball (e.g. the workspace's LICENSE). */
  readonly borrowed?: Readonly<Record<string, string>>;
  /** Builds `distDir` another way than tsc's emit of `src` (the server bundles its CLI); returns `distDir`. */
  readonly build?: (packageDir: string, distDir: string) => Promise<unknown>;
}

/** LICENSE_FILE is the MIT licence every floodgate package carries (the library's copy). */
export const LICENSE_FILE = fileURLToPath(new URL('../../floodgate/LICENSE', import.meta.url));

/**
 * buildDist compiles `src` into `distDir` (emptied first) and returns `distDir`. It rejects with
 * tsc's output when tsc fails (a syntax error, or an option problem).
 */
export async function buildDist(packager: Packager, distDir: string): Promise<string> {
  if (packager.build !== undefined) {
    await packager.build(packager.packageDir, distDir);
    return distDir;
  }
  await rm(distDir, { recursive: true, force: true });
  const tscBin = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  try {
    await run(process.execPath, [tscBin, '-p', join(packager.packageDir, 'tsconfig.build.json'), '--outDir', distDir], {
      cwd: packager.packageDir,
    });
  } catch (error) {
    const out = (error as { stdout?: string }).stdout ?? '';
    throw new Error(`tsc -p ${packager.packageDir}/tsconfig.build.json failed:\n${out}`, { cause: error });
  }
  return distDir;
}

/** stagePackage builds into `stageDir/dist` and lays out beside it what the tarball carries; it returns `stageDir`. */
export async function stagePackage(packager: Packager, stageDir: string): Promise<string> {
  await mkdir(stageDir, { recursive: true });
  const workspace = JSON.parse(await readFile(join(packager.packageDir, 'package.json'), 'utf8')) as Record<
    string,
    unknown
  >;
  await buildDist(packager, join(stageDir, 'dist'));
  await writeFile(join(stageDir, 'package.json'), `${JSON.stringify(publishedManifest(workspace), null, 2)}\n`);
  const copies = [
    ...packager.shipped.map((name) => [join(packager.packageDir, name), name] as const),
    ...Object.entries(packager.borrowed ?? {}).map(([name, from]) => [from, name] as const),
  ];
  await Promise.all(copies.map(([from, name]) => cp(from, join(stageDir, name), { recursive: true })));
  return stageDir;
}

/**
 * packTarball stages the package in a fresh temporary folder, runs `npm pack` there and returns
 * the tarball's absolute path in `destination`. It never writes into the package's own folder.
 */
export function packTarball(packager: Packager, destination: string): Promise<string> {
  return packStaged((stageDir) => stagePackage(packager, stageDir), destination);
}

/** runPackager is a build script's main: `--pack` packs into the cwd and prints the tarball, otherwise it builds `dist/`. */
export async function runPackager(packager: Packager, argv: readonly string[]): Promise<void> {
  try {
    if (argv.includes('--pack')) console.log(await packTarball(packager, process.cwd()));
    else console.log(await buildDist(packager, join(packager.packageDir, 'dist')));
  } catch (error) {
    console.error(error instanceof Error ? error.message : error);
    process.exitCode = 1;
  }
}
