/** runCommand runs `floodgate simulate` in process with `args` in `cwd`, and returns its exit code and what it printed. */
import { PassThrough } from 'node:stream';
import { runSimulateCommand } from '../src/index.js';

export async function runCommand(
  args: string[],
  cwd: string,
): Promise<{ code: number; stdout: string; stderr: string }> {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  stdout.on('data', (b: Buffer) => out.push(b));
  stderr.on('data', (b: Buffer) => err.push(b));
  const code = await runSimulateCommand(args, { stdout, stderr, cwd });
  return { code, stdout: Buffer.concat(out).toString(), stderr: Buffer.concat(err).toString() };
}
