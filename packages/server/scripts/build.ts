/**
 * Builds floodgate-server for publishing: the CLI bundled into `dist/cli/` (scripts/bundle.ts;
 * `dist/cli/main.js` is what `bin/floodgate.js` imports), no declarations or source maps. The
 * tarball also carries `bin/` and `proto/`, found from the package's root (src/package-root.ts).
 *
 *   node --import tsx scripts/build.ts            # builds into dist/
 *   node --import tsx scripts/build.ts --pack     # stages a copy and packs it into the cwd
 */
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { LICENSE_FILE, runPackager, type Packager } from '../../simulator/scripts/packager.js';
import { bundleCli } from './bundle.js';

/** SERVER is what floodgate-server's tarball is made of. */
export const SERVER: Packager = {
  packageDir: resolve(fileURLToPath(new URL('..', import.meta.url))),
  shipped: ['bin', 'proto'],
  borrowed: { LICENSE: LICENSE_FILE },
  build: bundleCli,
};

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  await runPackager(SERVER, process.argv);
}
