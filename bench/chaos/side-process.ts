/** The chaos bench's handle on one side's process (bench/chaos/side.ts): start it, stop it, read its records. */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { SideArgs, SideRecords } from './side.js';

const SIDE = fileURLToPath(new URL('./side.ts', import.meta.url));
const TSX_FLAGS = ['--conditions=floodgate-source', '--import', 'tsx'] as const;

/** SideProcess is a running side: its open loop runs from `start` until `stop`. */
export class SideProcess {
  private stdout = '';
  private stderr = '';
  private readonly exited: Promise<number | null>;

  private constructor(private readonly child: ChildProcess) {
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (this.stdout += chunk));
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (this.stderr += chunk));
    this.exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
  }

  /** start spawns a side and resolves once its client is connected and its loop has begun. */
  static async start(args: SideArgs): Promise<SideProcess> {
    const child = spawn(process.execPath, [...TSX_FLAGS, SIDE, JSON.stringify(args)], {
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const side = new SideProcess(child);
    const started = new Promise<void>((resolve) => {
      const check = (): void => {
        if (!side.stdout.startsWith('ready\n')) return;
        child.stdout!.off('data', check);
        resolve();
      };
      child.stdout!.on('data', check);
    });
    const failed = side.exited.then((code) =>
      Promise.reject(
        new Error(`side ${args.side} exited (${String(code)}) before it was ready: ${side.stderr.trim()}`),
      ),
    );
    await Promise.race([started, failed]);
    return side;
  }

  /** stop ends the side's loop and resolves with its records once its decisions have settled (or 5 s passed). */
  async stop(): Promise<SideRecords> {
    this.child.stdin!.end('stop\n');
    const code = await this.exited;
    const line = this.stdout.split('\n').find((l) => l.startsWith('{'));
    if (code !== 0 || line === undefined)
      throw new Error(`a side exited (${String(code)}): ${this.stderr.trim().split('\n').slice(-8).join('\n')}`);
    return JSON.parse(line) as SideRecords;
  }

  /** kill ends the process at once (after a failure elsewhere). */
  kill(): void {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGKILL');
  }
}
