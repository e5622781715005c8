/**
 * Installs floodgate as a user would: packs the library, the simulator and the server (each from a
 * staged copy, never touching the workspace's own folders) and runs `npm install --omit=dev` of the
 * three tarballs in an empty temporary folder, so their other dependencies come from the registry.
 */
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { packTarball as packLibrary } from '../../../../floodgate/scripts/build.js';
import { packTarball } from '../../../../simulator/scripts/packager.js';
import { SIMULATOR } from '../../../../simulator/scripts/build.js';
import { SERVER } from '../../../scripts/build.js';

const run = promisify(execFile);

/** Installed is an app folder with the three packages installed, production dependencies only. */
export interface Installed {
  /** The temp dir holding the tarballs and the app; remove it when done. */
  readonly root: string;
  readonly tarballs: readonly string[];
  /** The app folder, where `node_modules/.bin/floodgate` is. */
  readonly appDir: string;
  /** The installed `floodgate` command. */
  readonly bin: string;
}

/** packAll packs the three packages into `destination` at once and returns the tarballs' paths. */
export function packAll(destination: string): Promise<string[]> {
  return Promise.all([packLibrary(destination), packTarball(SIMULATOR, destination), packTarball(SERVER, destination)]);
}

/**
 * The environment for the nested npm: without the `npm_*` variables that `npm test` sets for the
 * workspace (its config would otherwise apply to the app's install).
 */
function cleanEnv(): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.toLowerCase().startsWith('npm_')));
}

/** installAll packs the three packages and installs them into a fresh app folder (`root/app`). */
export async function installAll(): Promise<Installed> {
  const root = await mkdtemp(join(tmpdir(), 'floodgate-install-'));
  const tarballs = await packAll(root);
  const appDir = join(root, 'app');
  await mkdir(appDir);
  await writeFile(join(appDir, 'package.json'), JSON.stringify({ name: 'floodgate-install-check', private: true }));
  const args = ['install', '--omit=dev', '--no-audit', '--no-fund', '--loglevel=error', ...tarballs];
  await run('npm', args, { cwd: appDir, env: cleanEnv(), timeout: 180_000 });
  return { root, tarballs, appDir, bin: join(appDir, 'node_modules', '.bin', 'floodgate') };
}
