/**
 * Builds floodgate-server for publishing: ES modules in `dist/` (the CLI's entry is
 * `dist/cli/main.js`, which `bin/floodgate.js` imports), no declarations or source maps. The
 * tarball also carries `bin/` and `proto/`: `ratelimit/protocol/proto.ts` finds the .proto files at
 * `../../../proto/` from itself, which is the same folder from `src/ratelimit/protocol/` and
 * `dist/ratelimit/protocol/`.
 *
 *   node --import tsx scripts/build.ts            # builds into dist/
 *   node --import tsx scripts/build.ts --pack     # stages a copy and packs it into the cwd
 */
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { LICENSE_FILE, runPackager, type Packager } from '../../simulator/scripts/packager.js';

/** SERVER is what floodgate-server's tarball is made of. */
export const SERVER: Packager = {
  packageDir: resolve(fileURLToPath(new URL('..', import.meta.url))),
  shipped: ['bin', 'proto'],
  borrowed: { LICENSE: LICENSE_FILE },
};

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  await runPackager(SERVER, process.argv);
}
