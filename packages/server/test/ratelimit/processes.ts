/** Test support: rate limit service processes (src/cli/ratelimit-main.ts) started and stopped by pid. */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';

const MAIN = fileURLToPath(new URL('../../src/cli/ratelimit-main.ts', import.meta.url));

/** ServiceProcess is one running decision service. */
export interface ServiceProcess {
  readonly pid: number;
  /** stderr returns what the process has written to stderr so far. */
  stderr(): string;
  readonly grpcPort: number;
  readonly httpPort: number;
  /** The metrics port (`--metrics-port`), or null. */
  readonly metricsPort: number | null;
  stop(): Promise<void>;
}

/** startServiceProcess runs main.ts with `args` and resolves once it prints its ports (within 20 s). */
export async function startServiceProcess(args: readonly string[]): Promise<ServiceProcess> {
  const child: ChildProcess = spawn(
    process.execPath,
    ['--conditions=floodgate-source', '--import', 'tsx', MAIN, '--grpc-port', '0', '--http-port', '0', ...args],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const lines = createInterface({ input: child.stdout! });
  const ready = new Promise<{ grpcPort: number; httpPort: number; metricsPort: number | null }>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`decision service did not start within 20 s: ${stderr}`)), 20_000);
    lines.on('line', (line) => {
      clearTimeout(timer);
      resolve(JSON.parse(line) as { grpcPort: number; httpPort: number; metricsPort: number | null });
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`decision service exited with ${code}: ${stderr}`));
    });
  });
  const ports = await ready;
  return {
    ...ports,
    pid: child.pid!,
    stderr: () => stderr,
    stop: async () => {
      if (child.exitCode !== null) return;
      const exited = once(child, 'exit');
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
    },
  };
}
