/** Runs one case in its own Node process and reads back its one JSON line. */

import { spawn } from 'node:child_process';

/** The flags of `npm run bench`, so a child resolves floodgate's source and can force GCs. */
export const CHILD_FLAGS = ['--conditions=floodgate-source', '--expose-gc', '--import', 'tsx'] as const;

/**
 * runChild runs `node <flags> <file> <args>` in `cwd` and resolves with the last JSON line it
 * printed; it rejects with the tail of stderr when the child fails or prints no JSON.
 */
export function runChild(cwd: string, file: string, args: readonly string[]): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...CHILD_FLAGS, file, ...args], { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code, signal) => {
      const line = stdout
        .split('\n')
        .reverse()
        .find((l) => l.startsWith('{'));
      if (code === 0 && line !== undefined) {
        try {
          resolve(JSON.parse(line));
          return;
        } catch {
          // fall through to the failure report
        }
      }
      const tail = stderr.trim().split('\n').slice(-6).join('\n') || stdout.trim().split('\n').slice(-3).join('\n');
      reject(new Error(`exit ${code ?? signal}${tail ? `: ${tail}` : ''}`));
    });
  });
}
