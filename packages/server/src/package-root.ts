/**
 * The server package's own folder, for the files it ships beside its code (package.json, proto/).
 */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * PACKAGE_ROOT is the folder of the server's package.json, found upward from this module: the
 * same answer from `src/` (development), from `dist/` (tsc's output) and from the bundle in
 * `dist/cli/`, where every module shares one folder.
 */
export const PACKAGE_ROOT = packageRootFrom(dirname(fileURLToPath(import.meta.url)));

/** packageRootFrom returns the nearest folder at or above `dir` holding a package.json. */
export function packageRootFrom(dir: string): string {
  for (let at = dir; ; at = dirname(at)) {
    if (existsSync(join(at, 'package.json'))) return at;
    if (dirname(at) === at) throw new Error(`no package.json in ${dir} or any folder above it`);
  }
}
