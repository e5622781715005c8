/**
 * Counting a server's instructions per request with valgrind's callgrind: shared by
 * bench/http-instructions.ts (middleware) and bench/gateway-instructions.ts (whole proxies).
 * A count is what the server's own user-space code executes: a busy machine does not move it.
 */
import { spawn, execFile } from 'node:child_process';
import { mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import { Agent, get } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** CallgrindWindows are how many requests are sent before and while counting. */
export interface CallgrindWindows {
  /** Requests sent before instrumentation goes on (V8 compiles what it will). */
  readonly warmup: number;
  /** Requests sent after it goes on, uncounted. */
  readonly settle: number;
  /** Counted windows, and requests in each. */
  readonly windows: number;
  readonly requests: number;
  /**
   * Requests in flight at once, each on its own keep-alive connection (default 1: one at a time).
   * More than one lets a server batch what arrives together (the Redis store's one script per tick).
   */
  readonly inFlight?: number;
}

/** CallgrindSubject is one server to count: its command, how it reports its port, what it answers. */
export interface CallgrindSubject {
  readonly name: string;
  /** The program and its arguments, run under valgrind. */
  readonly command: readonly string[];
  /** The listening port, once the server's stdout (so far) says it; undefined until then. */
  portOf(stdout: string): number | undefined;
  /** The path requested, and the status every answer must have (after the first, which may differ: a refusing limit admits it). */
  readonly path: string;
  readonly status: number;
  /**
   * How to send `count` requests, `inFlight` at a time, when they are not the HTTP GETs of
   * {@link sendRequests} (bench/decision-instructions.ts sends gRPC calls); `check` is false for
   * the first request, whose answer may differ.
   */
  readonly send?: (port: number, options: { count: number; inFlight: number; check: boolean }) => Promise<void>;
}

/**
 * sendRequests sends `count` GET requests over `inFlight` keep-alive connections (one: one request
 * after another), each connection sending its next as soon as its last is answered, each answer
 * expected to be `status` (any, when undefined).
 */
export async function sendRequests(
  port: number,
  path: string,
  status: number | undefined,
  options: { count: number; inFlight: number },
): Promise<void> {
  // First in, first out: every connection is kept busy, none left idle long enough (under
  // callgrind, seconds) for the server to close it as another request is written on it.
  const agent = new Agent({ keepAlive: true, maxSockets: options.inFlight, scheduling: 'fifo' });
  let left = options.count;
  const one = (): Promise<void> =>
    new Promise<void>((resolve, reject) => {
      const req = get({ host: '127.0.0.1', port, path, agent }, (res) => {
        if (status !== undefined && res.statusCode !== status)
          reject(new Error(`${path}: status ${res.statusCode} from port ${port}, not ${status}`));
        res.resume();
        res.on('end', resolve);
      });
      // A server stalled past its keep-alive timeout (a GC under valgrind takes seconds) closes a
      // connection with the next request unread: sent again on a new one, as HTTP allows for a GET.
      req.on('error', (error: NodeJS.ErrnoException) =>
        req.reusedSocket && error.code === 'ECONNRESET' ? one().then(resolve, reject) : reject(error),
      );
    });
  const lane = async (): Promise<void> => {
    while (left > 0) {
      left--;
      await one();
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.min(options.inFlight, options.count) }, lane));
  } finally {
    agent.destroy();
  }
}

/** control sends `callgrind_control` its `args` for the process `pid` (`--instr=on`, `--zero`, `--dump`). */
export async function control(pid: number, ...args: string[]): Promise<void> {
  await run('callgrind_control', [...args, String(pid)], { timeout: 60_000 });
}

/** dumpedInstructions returns the instructions counted in dump `n` (from 1) that callgrind wrote for `pid` in `dir`. */
export async function dumpedInstructions(dir: string, pid: number, n: number, name: string): Promise<number> {
  // Each dump on request is cg.<pid>.<n>, numbered from 1.
  const dump = (await readdir(dir)).find((f) => f === `cg.${pid}.${n}`);
  if (dump === undefined) throw new Error(`${name}: callgrind wrote no dump ${n}`);
  const summary = /^summary: (\d+)$/m.exec(await readFile(join(dir, dump), 'utf8'));
  if (summary === null) throw new Error(`${name}: no summary line in callgrind's dump`);
  return Number(summary[1]);
}

/** countInstructions runs `subject` under callgrind and returns its instructions per request in each window. */
export async function countInstructions(subject: CallgrindSubject, o: CallgrindWindows): Promise<number[]> {
  const dir = await mkdtemp(join(tmpdir(), 'floodgate-callgrind-'));
  const child = spawn(
    'valgrind',
    ['--tool=callgrind', '--instr-atstart=no', `--callgrind-out-file=${join(dir, 'cg.%p')}`, ...subject.command],
    { stdio: ['ignore', 'pipe', 'ignore'] },
  );
  try {
    const port = await new Promise<number>((resolve, reject) => {
      let out = '';
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
        out += chunk;
        const port = subject.portOf(out);
        if (port !== undefined) resolve(port);
      });
      child.on('exit', (code) => reject(new Error(`${subject.name}: the server exited with ${code} before listening`)));
    });
    const pid = child.pid!;
    const inFlight = o.inFlight ?? 1;
    const sendTo = (options: { count: number; inFlight: number; check: boolean }): Promise<void> =>
      subject.send !== undefined
        ? subject.send(port, options)
        : sendRequests(port, subject.path, options.check ? subject.status : undefined, options);
    const send = (count: number): Promise<void> => sendTo({ count, inFlight, check: true });
    await sendTo({ count: 1, inFlight: 1, check: false });
    await send(o.warmup);
    await control(pid, '--instr=on');
    await send(o.settle);
    const windows: number[] = [];
    for (let w = 0; w < o.windows; w++) {
      await control(pid, '--zero');
      await send(o.requests);
      await control(pid, '--dump');
      windows.push((await dumpedInstructions(dir, pid, w + 1, subject.name)) / o.requests);
    }
    return windows;
  } finally {
    child.kill('SIGKILL');
    await rm(dir, { recursive: true, force: true });
  }
}

/** inParallel runs `work` over `items`, `width` at a time, in order of `items`. */
export async function inParallel<T>(
  items: readonly T[],
  width: number,
  work: (item: T) => Promise<void>,
): Promise<void> {
  const queue = [...items];
  const worker = async (): Promise<void> => {
    for (let item = queue.shift(); item !== undefined; item = queue.shift()) await work(item);
  };
  await Promise.all(Array.from({ length: width }, worker));
}
