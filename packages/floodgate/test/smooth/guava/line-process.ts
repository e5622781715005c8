import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';

/**
 * LineProcess is a child process spoken to one line at a time: each `ask` writes a line to its
 * stdin and resolves to the next line it prints. Asks are answered in order. The process's stderr
 * is kept, to say why it died.
 */
export class LineProcess {
  private readonly child: ChildProcess;
  private readonly waiting: Array<{ resolve: (line: string) => void; reject: (error: Error) => void }> = [];
  private stderr = '';
  private exited: Error | undefined;

  constructor(command: string, args: readonly string[], what: string) {
    this.child = spawn(command, args, { stdio: ['pipe', 'pipe', 'pipe'] });
    this.child.stderr!.on('data', (chunk: Buffer) => {
      this.stderr += chunk.toString();
    });
    createInterface({ input: this.child.stdout! }).on('line', (line) => this.waiting.shift()?.resolve(line));
    this.child.on('exit', (code, signal) => {
      this.exited = new Error(`${what} exited (${code ?? signal}): ${this.stderr.slice(-2000)}`);
      for (const w of this.waiting.splice(0)) w.reject(this.exited);
    });
  }

  /** ask sends `line` and resolves to the line printed in answer. */
  ask(line: string): Promise<string> {
    if (this.exited !== undefined) return Promise.reject(this.exited);
    return new Promise((resolve, reject) => {
      this.waiting.push({ resolve, reject });
      this.child.stdin!.write(`${line}\n`);
    });
  }

  /** close ends stdin and resolves once the process has exited. */
  close(): Promise<void> {
    if (this.exited !== undefined) return Promise.resolve();
    return new Promise((resolve) => {
      this.child.once('exit', () => resolve());
      this.child.stdin!.end();
    });
  }
}
