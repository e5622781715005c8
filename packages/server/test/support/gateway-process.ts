/**
 * Test support: a gateway started as a child process (`floodgate serve`) on free loopback ports,
 * with a config written to a temp directory; its JSON log lines are kept for assertions.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const MAIN = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'src', 'cli', 'main.ts');
const START_TIMEOUT_MS = 15_000;

/** LogLine is one pino line of the gateway's output. */
export type LogLine = Record<string, unknown> & { msg?: string };

/** GatewayProcess is a running gateway child. */
export interface GatewayProcess {
  readonly port: number;
  readonly adminPort: number;
  readonly configFile: string;
  readonly logs: LogLine[];
  readonly child: ChildProcess;
  /** url returns `http://127.0.0.1:<port><path>`. */
  url(path: string): string;
  adminUrl(path: string): string;
  /** writeConfig replaces the config file (to trigger a reload). */
  writeConfig(yaml: string): Promise<void>;
  /** waitForLog resolves with the first log line (from `from` on) whose msg is `msg`. */
  waitForLog(msg: string, from?: number, timeoutMs?: number): Promise<LogLine>;
  /** stop sends SIGTERM and resolves with the exit code, killing it after `timeoutMs`. */
  stop(timeoutMs?: number): Promise<number | null>;
}

/**
 * startGateway writes `yaml` to a temp config and starts `floodgate serve` on it, resolving once it
 * listens (rejecting after `startTimeoutMs`, default 15 s).
 */
export async function startGateway(
  yaml: string,
  options: { env?: NodeJS.ProcessEnv; args?: string[]; startTimeoutMs?: number } = {},
): Promise<GatewayProcess> {
  const dir = await mkdtemp(join(tmpdir(), 'floodgate-gw-'));
  const configFile = join(dir, 'floodgate.yaml');
  await writeFile(configFile, yaml);
  const args = [
    '--conditions=floodgate-source',
    '--import',
    'tsx',
    MAIN,
    'serve',
    '--config',
    configFile,
    '--port',
    '0',
    '--admin-port',
    '0',
    // Without a drain period every stop would wait it out; the drain tests set their own.
    ...(yaml.includes('shutdown:') || options.args?.includes('--drain-ms') === true ? [] : ['--drain-ms', '0']),
    ...(options.args ?? []),
  ];
  const child = spawn(process.execPath, args, {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...options.env },
  });
  const logs: LogLine[] = [];
  const waiters = new Set<() => void>();
  let buffered = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    buffered += chunk.toString();
    let nl: number;
    while ((nl = buffered.indexOf('\n')) >= 0) {
      const line = buffered.slice(0, nl);
      buffered = buffered.slice(nl + 1);
      try {
        logs.push(JSON.parse(line) as LogLine);
      } catch {
        logs.push({ msg: line });
      }
      for (const w of waiters) w();
    }
  });
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));

  const waitForLog = (msg: string, from = 0, timeoutMs = START_TIMEOUT_MS): Promise<LogLine> =>
    new Promise((resolve, reject) => {
      const check = (): boolean => {
        const found = logs.slice(from).find((l) => l.msg === msg);
        if (found === undefined) return false;
        cleanup();
        resolve(found);
        return true;
      };
      const timer = setTimeout(() => {
        cleanup();
        reject(
          new Error(
            `no "${msg}" log line within ${timeoutMs} ms; logs:\n${logs.map((l) => JSON.stringify(l)).join('\n')}\nstderr:\n${stderr}`,
          ),
        );
      }, timeoutMs);
      const cleanup = (): void => {
        clearTimeout(timer);
        waiters.delete(waiter);
      };
      const waiter = (): void => void check();
      if (!check()) waiters.add(waiter);
    });

  const stop = async (timeoutMs = 12_000): Promise<number | null> => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    const code = await exited;
    clearTimeout(timer);
    await rm(dir, { recursive: true, force: true });
    return code;
  };

  let listening: LogLine;
  try {
    listening = await Promise.race([
      waitForLog('listening', 0, options.startTimeoutMs ?? START_TIMEOUT_MS),
      exited.then((code) =>
        Promise.reject(
          new Error(`the gateway exited (${String(code)}) before listening:\n${JSON.stringify(logs)}\n${stderr}`),
        ),
      ),
    ]);
  } catch (err) {
    await stop(1_000);
    throw err;
  }
  const port = listening.port as number;
  const adminPort = listening.adminPort as number;
  return {
    port,
    adminPort,
    configFile,
    logs,
    child,
    url: (path) => `http://127.0.0.1:${port}${path}`,
    adminUrl: (path) => `http://127.0.0.1:${adminPort}${path}`,
    writeConfig: (text) => writeFile(configFile, text),
    waitForLog,
    stop,
  };
}
