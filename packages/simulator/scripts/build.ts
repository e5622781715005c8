/**
 * Builds floodgate-simulator for publishing: ES modules and declarations in `dist/`, no source maps.
 *
 *   node --import tsx scripts/build.ts            # builds into dist/
 *   node --import tsx scripts/build.ts --pack     # stages a copy and packs it into the cwd
 */
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { LICENSE_FILE, runPackager, type Packager } from './packager.js';

/** SIMULATOR is what floodgate-simulator's tarball is made of: dist, the README and the example scenarios. */
export const SIMULATOR: Packager = {
  packageDir: resolve(fileURLToPath(new URL('..', import.meta.url))),
  shipped: ['README.md', 'scenarios'],
  borrowed: { LICENSE: LICENSE_FILE },
};

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  await runPackager(SIMULATOR, process.argv);
}
