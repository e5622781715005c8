/**
 * Test support for nginx in front of floodgate: Debian's nginx (`/usr/sbin/nginx`) run in the
 * foreground with a prefix folder of its own on free loopback ports, from `examples/nginx/nginx.conf`
 * with only its ports (and, when asked, its failure mode) changed; stopped by pid.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** NGINX is the nginx binary the tests run (Debian's nginx-light, which has the auth_request module). */
export const NGINX = '/usr/sbin/nginx';

/** NGINX_MISSING is why the nginx tests skip, or false when nginx is installed. */
export const NGINX_MISSING: string | false = existsSync(NGINX)
  ? false
  : `nginx is not installed at ${NGINX} (apt-get install -y nginx-light)`;

/** EXAMPLE_DIR is `examples/nginx/`: the nginx.conf and the descriptor config the tests run. */
export const EXAMPLE_DIR = fileURLToPath(new URL('../../../../examples/nginx/', import.meta.url));

/** ExamplePorts are the loopback ports that replace the example's 8080 (nginx), 8181 (floodgate) and 3000 (the app). */
export interface ExamplePorts {
  readonly nginx: number;
  readonly floodgate: number;
  readonly app: number;
}

/** replaceOnce returns `text` with its one `from` replaced, or throws when `from` is not there exactly once. */
function replaceOnce(text: string, from: string, to: string): string {
  const parts = text.split(from);
  if (parts.length !== 2) throw new Error(`examples/nginx/nginx.conf has ${parts.length - 1} of ${from}; expected 1`);
  return parts.join(to);
}

/**
 * exampleConf returns `examples/nginx/nginx.conf` with `ports` for its own, `onFailure` for its
 * `set $floodgate_on_failure closed;` and `worker_processes` set (the example's `auto` unless given).
 */
export function exampleConf(
  ports: ExamplePorts,
  options: { readonly onFailure?: 'open' | 'closed'; readonly workerProcesses?: number } = {},
): string {
  let conf = readFileSync(join(EXAMPLE_DIR, 'nginx.conf'), 'utf8');
  conf = replaceOnce(conf, 'listen 127.0.0.1:8080;', `listen 127.0.0.1:${ports.nginx};`);
  conf = replaceOnce(conf, 'server 127.0.0.1:8181;', `server 127.0.0.1:${ports.floodgate};`);
  conf = replaceOnce(conf, 'server 127.0.0.1:3000;', `server 127.0.0.1:${ports.app};`);
  conf = replaceOnce(
    conf,
    'set $floodgate_on_failure closed;',
    `set $floodgate_on_failure ${options.onFailure ?? 'closed'};`,
  );
  if (options.workerProcesses !== undefined)
    conf = replaceOnce(conf, 'worker_processes auto;', `worker_processes ${options.workerProcesses};`);
  return conf;
}

/** RunningNginx is an nginx master process (its workers are its children) and what it wrote to stderr. */
export interface RunningNginx {
  readonly pid: number;
  readonly port: number;
  readonly child: ChildProcess;
  /** stderr returns nginx's error log so far (the example logs to stderr). */
  stderr(): string;
  /** stop sends SIGTERM to the master (nginx's fast shutdown), waits for it, and removes the prefix folder. */
  stop(): Promise<void>;
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1', () => {
      socket.destroy();
      resolve(true);
    });
    socket.on('error', () => resolve(false));
  });
}

/**
 * startNginx runs `conf` with a new prefix folder under the system's temp folder, in the
 * foreground (`-g 'daemon off;'`), and resolves once it accepts connections on `port` (within 10 s).
 */
export async function startNginx(conf: string, port: number): Promise<RunningNginx> {
  const prefix = await mkdtemp(join(tmpdir(), 'floodgate-nginx-'));
  await writeFile(join(prefix, 'nginx.conf'), conf);
  const child = spawn(NGINX, ['-p', prefix, '-e', 'stderr', '-c', join(prefix, 'nginx.conf'), '-g', 'daemon off;'], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = once(child, 'exit');
      child.kill('SIGTERM');
      await exited;
    }
    await rm(prefix, { recursive: true, force: true });
  };
  for (let i = 0; i < 200; i++) {
    if (child.exitCode !== null) break;
    if (await accepts(port)) return { pid: child.pid!, port, child, stderr: () => stderr, stop };
    await new Promise((r) => setTimeout(r, 50));
  }
  await stop();
  throw new Error(`nginx did not start listening on ${port}: ${stderr}`);
}
