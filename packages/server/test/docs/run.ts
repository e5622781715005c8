/**
 * Runs the commands the docs show, as written, from the repository root: a command to completion
 * (exit code 0), or a server (`npm start`, `floodgate serve`, `floodgate ratelimit`) until it is up,
 * then the commands that talk to its port, then SIGTERM (twice) to its process group.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** REPO_ROOT is the repository's root folder, where the docs' commands run. */
export const REPO_ROOT = fileURLToPath(new URL('../../../../', import.meta.url));

/** The environment of a command: the checkout's `node_modules/.bin` first on PATH, as `npx` and `npm run` do. */
function commandEnv(): NodeJS.ProcessEnv {
  const env = Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.toLowerCase().startsWith('npm_')));
  return { ...env, PATH: `${join(REPO_ROOT, 'node_modules', '.bin')}${delimiter}${process.env['PATH'] ?? ''}` };
}

/** Outcome is how a command ended. */
export interface Outcome {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

function spawnShell(command: string): ChildProcess {
  // Its own process group, so that stopping it stops npm, the shell and node under it.
  return spawn('bash', ['-c', command], { cwd: REPO_ROOT, env: commandEnv(), detached: true, stdio: 'pipe' });
}

function collect(child: ChildProcess): { out: () => Outcome; exited: Promise<Outcome> } {
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const out = (): Outcome => ({ code: child.exitCode, signal: child.signalCode, stdout, stderr });
  const exited = new Promise<Outcome>((resolve) => child.once('close', () => resolve(out())));
  return { out, exited };
}

function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  try {
    process.kill(-child.pid!, signal);
  } catch {
    // The group has already gone.
  }
}

/** runToEnd runs `command` and resolves with its outcome; past `timeoutMs` its group is killed. */
export async function runToEnd(command: string, timeoutMs: number): Promise<Outcome> {
  const child = spawnShell(command);
  const { exited } = collect(child);
  const timer = setTimeout(() => killGroup(child, 'SIGKILL'), timeoutMs);
  const outcome = await exited;
  clearTimeout(timer);
  return outcome;
}

/** Ready is what a server said once it was up: its ports. */
export type Ready = Record<string, unknown>;

/** Server is a long-running command, started and up. */
export interface Server {
  readonly ready: Ready;
  /** stop sends SIGTERM to the command's process group, again after 200 ms (SIGKILL after 10 s), and resolves with its outcome. */
  stop(): Promise<Outcome>;
}

/**
 * The JSON line a server prints once it is up: `floodgate serve` logs `{"msg":"listening",
 * "port", "adminPort"}`, `floodgate ratelimit` prints `{"ready":true,"grpcPort","httpPort"}`.
 */
function readyLine(line: string): Ready | undefined {
  if (!line.startsWith('{')) return undefined;
  try {
    const parsed = JSON.parse(line) as Ready;
    return parsed['msg'] === 'listening' || parsed['ready'] === true ? parsed : undefined;
  } catch {
    return undefined;
  }
}

/** startServer runs `command` until it prints its ready line (rejecting if it exits first or after `timeoutMs`). */
export async function startServer(command: string, timeoutMs: number): Promise<Server> {
  const child = spawnShell(command);
  const { out, exited } = collect(child);
  const stop = async (): Promise<Outcome> => {
    killGroup(child, 'SIGTERM');
    // `floodgate serve` keeps serving for its drain period after the first SIGTERM (docs/gateway-operations.md); a second one
    // (apart from the first, or the two merge into one pending signal) cuts it short, as an operator stopping it at once would.
    const again = setTimeout(() => killGroup(child, 'SIGTERM'), 200);
    const timer = setTimeout(() => killGroup(child, 'SIGKILL'), 10_000);
    const outcome = await exited;
    clearTimeout(again);
    clearTimeout(timer);
    return outcome;
  };
  const ready = await new Promise<Ready>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`not up within ${timeoutMs} ms`)), timeoutMs);
    const onData = (): void => {
      const found = out()
        .stdout.split('\n')
        .map(readyLine)
        .find((r) => r !== undefined);
      if (found === undefined) return;
      clearTimeout(timer);
      child.stdout!.off('data', onData);
      resolve(found);
    };
    child.stdout!.on('data', onData);
    void exited.then((o) => {
      clearTimeout(timer);
      reject(new Error(`exited (${String(o.code ?? o.signal)}) before it was up`));
    });
  }).catch(async (error: Error) => {
    const o = await stop();
    throw new Error(`${command}: ${error.message}\nstdout:\n${o.stdout}\nstderr:\n${o.stderr}`);
  });
  return { ready, stop };
}
