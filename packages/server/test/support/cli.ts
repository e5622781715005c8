/** Runs the `floodgate` command as a user would, through its launcher. */
import { execFile } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** FLOODGATE_BIN is the path of the `floodgate` launcher (`packages/server/bin/floodgate.js`). */
export const FLOODGATE_BIN = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'bin', 'floodgate.js');

/** floodgate runs the launcher with `args` (20 s at most) and resolves to its exit code and output. */
export async function floodgate(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [FLOODGATE_BIN, ...args], { timeout: 20_000 });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}
