/**
 * HTTP benchmark: each framework bare, with floodgate (an in-memory limit that admits everything),
 * and with its own rate-limit peer (express-rate-limit, @fastify/rate-limit), loaded over loopback.
 * With `--noop`, also with a middleware that does nothing, which shows what the framework itself
 * charges for one more middleware (for Hono, leaving its one-handler fast path). With `--quiet`,
 * also floodgate with its draft headers off, which shows what writing the two headers costs. With
 * `--fixed`, also a middleware that sets the two headers to constants and does nothing else: what
 * the framework charges for the headers alone, the least any limiter that sends them can cost.
 * With `--counting`, also floodgate with a limit so high that it is never reached but `remaining`
 * counts down on every request (a fixed window of 10^9 an hour, so no admitted verdict is ever
 * reused), beside its floor: a middleware with no limiter that sets the same two headers to the
 * same values, changing per request (a counter for `r`, the seconds to the window's end for `t`).
 * Every server runs in its own child process (this file, with `--serve`); the load generator in
 * another. It prints requests/s and ratios; nothing is asserted.
 *
 * The load generator is wrk (Debian's `wrk`) when it is on the PATH, else autocannon; `--client`
 * picks one. wrk, written in C, needs far less CPU than autocannon for the same load, so the server
 * is what limits the rate. With two or more CPUs and `taskset`, servers run on CPU 0 and the load
 * generator on the others (`--no-pin` turns this off), so the two never take turns on one core.
 * On a shared virtual machine req/s still moves by 5-15% from one second to the next, so cells are
 * measured in many short rounds, alternating, and each ratio is the median of the rounds' own.
 *
 *   node --conditions=floodgate-source --import tsx bench/http.ts [--client wrk|autocannon] [--no-pin]
 *        [--duration 1] [--rounds 9] [--warmup 2] [--connections 10] [--noop] [--quiet] [--fixed] [--counting] [filter...]
 *
 * About 11 s per cell by default (2 s warm-up, then 9 rounds of 1 s), so about 2.5 minutes in all.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { availableParallelism } from 'node:os';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

type Framework = 'node' | 'express' | 'fastify' | 'koa' | 'hono';
type Subject = 'bare' | 'floodgate' | 'peer' | 'noop' | 'quiet' | 'fixed' | 'counting' | 'floor' | 'refused';

const FRAMEWORKS: readonly Framework[] = ['node', 'express', 'fastify', 'koa', 'hono'];
const PEERS: Partial<Record<Framework, string>> = { express: 'express-rate-limit', fastify: '@fastify/rate-limit' };
const SELF = fileURLToPath(import.meta.url);
const CHILD_FLAGS = ['--conditions=floodgate-source', '--import', 'tsx'];
/** A limit no run reaches, so every request is admitted and every response is a 200. */
const HUGE = 1e12;

// ---- servers (child side) ----

async function floodgateLimiter() {
  const { Limiter, tokenBucket } = await import('floodgate');
  return new Limiter({ policy: tokenBucket({ capacity: HUGE, refillPerSecond: HUGE }) });
}

/** The `counting` subjects' limit: never reached in a run, so every request is admitted and `remaining` only falls. */
const COUNTING_LIMIT = 1e9;
const COUNTING_WINDOW_MS = 3_600_000;

/** A fixed window of {@link COUNTING_LIMIT} an hour: `remaining` is new on every request. */
async function countingLimiter() {
  const { Limiter, fixedWindow } = await import('floodgate');
  return new Limiter({ policy: fixedWindow({ limit: COUNTING_LIMIT, windowMs: COUNTING_WINDOW_MS }) });
}

/**
 * The `refused` subject's limiter: one request an hour, so every request after the first is
 * refused (a 429), for bench/http-instructions.ts's count of the refused path.
 */
async function refusingLimiter() {
  const { Limiter, fixedWindow } = await import('floodgate');
  return new Limiter({ policy: fixedWindow({ limit: 1, windowMs: COUNTING_WINDOW_MS }) });
}

/**
 * Whether `subject` runs floodgate: with its default headers, `quiet` with the draft headers off,
 * `counting` counting down, `refused` refusing every request after the first.
 */
const isFloodgate = (subject: Subject): boolean =>
  subject === 'floodgate' || subject === 'quiet' || subject === 'counting' || subject === 'refused';

/** The limiter of floodgate's `subject`. */
function limiterOf(subject: Subject) {
  if (subject === 'counting') return countingLimiter();
  return subject === 'refused' ? refusingLimiter() : floodgateLimiter();
}

/** floodgate's options for `subject`: `quiet` turns the draft headers off, to show what writing them costs. */
async function floodgateOptions(subject: Subject) {
  return {
    limiter: await limiterOf(subject),
    draftHeaders: subject !== 'quiet',
  };
}

/** A Connect-style middleware that does nothing. */
function noopConnect(_req: unknown, _res: unknown, next: () => void): void {
  next();
}

/**
 * The two draft headers as floodgate writes them in this benchmark, as constants: what the `fixed`
 * subjects set with no limiter at all, the least any limiter that sends them costs a framework.
 */
const FIXED_HEADERS: readonly (readonly [string, string])[] = [
  ['ratelimit-policy', '"default";q=1000000000000;w=1'],
  ['ratelimit', '"default";r=999999999999;t=1'],
];

/** A Connect-style middleware that sets {@link FIXED_HEADERS} and goes on. */
function fixedConnect(_req: unknown, res: ServerResponse, next: () => void): void {
  for (const [name, value] of FIXED_HEADERS) res.setHeader(name, value);
  next();
}

/**
 * The floor of the `counting` subject: no limiter, the same two headers with the same values as
 * floodgate sends there, `r` counting down per request and `t` the seconds to the end of the
 * window (windows start at multiples of their length, as floodgate's fixed window's do).
 */
const floor = {
  remaining: COUNTING_LIMIT,
  policy: `"default";q=${COUNTING_LIMIT};w=${COUNTING_WINDOW_MS / 1000}`,
  headers(set: (name: string, value: string) => unknown): void {
    const now = Date.now();
    const endMs = (Math.floor(now / COUNTING_WINDOW_MS) + 1) * COUNTING_WINDOW_MS;
    floor.remaining--;
    set('ratelimit-policy', floor.policy);
    set('ratelimit', '"default";r=' + floor.remaining + ';t=' + Math.ceil((endMs - now) / 1000));
  },
};

/** A Connect-style middleware that sets the floor's headers and goes on. */
function floorConnect(_req: unknown, res: ServerResponse, next: () => void): void {
  floor.headers((name, value) => res.setHeader(name, value));
  next();
}

function hello(_req: IncomingMessage, res: ServerResponse): void {
  res.setHeader('content-type', 'text/plain');
  res.end('ok');
}

async function serveNode(subject: Subject): Promise<ReturnType<typeof createServer>> {
  if (subject === 'bare') return createServer(hello);
  if (subject === 'fixed') return createServer((req, res) => fixedConnect(req, res, () => hello(req, res)));
  if (subject === 'floor') return createServer((req, res) => floorConnect(req, res, () => hello(req, res)));
  if (subject === 'noop') return createServer((req, res) => noopConnect(req, res, () => hello(req, res)));
  const { floodgateNode } = await import('floodgate/http/node');
  const limit = floodgateNode(await floodgateOptions(subject));
  return createServer((req, res) => limit(req, res, () => hello(req, res)));
}

async function serveExpress(subject: Subject): Promise<ReturnType<typeof createServer>> {
  const { default: express } = await import('express');
  const app = express();
  if (isFloodgate(subject))
    app.use((await import('floodgate/http/express')).floodgateExpress(await floodgateOptions(subject)));
  if (subject === 'peer') app.use((await import('express-rate-limit')).rateLimit({ windowMs: 60_000, limit: HUGE }));
  if (subject === 'noop') app.use(noopConnect);
  if (subject === 'fixed') app.use(fixedConnect);
  if (subject === 'floor') app.use(floorConnect);
  app.get('/', (_req, res) => void res.send('ok'));
  return createServer(app);
}

async function serveKoa(subject: Subject): Promise<ReturnType<typeof createServer>> {
  const { default: Koa } = await import('koa');
  const app = new Koa();
  if (isFloodgate(subject)) app.use((await import('floodgate/http/koa')).floodgateKoa(await floodgateOptions(subject)));
  if (subject === 'noop') app.use((_ctx, next) => next());
  if (subject === 'fixed') app.use((ctx, next) => (fixedConnect(ctx.req, ctx.res, () => {}), next()));
  if (subject === 'floor') app.use((ctx, next) => (floorConnect(ctx.req, ctx.res, () => {}), next()));
  app.use((ctx) => void (ctx.body = 'ok'));
  return createServer(app.callback());
}

async function serveHono(subject: Subject): Promise<ReturnType<typeof createServer>> {
  const { Hono } = await import('hono');
  const { createAdaptorServer } = await import('@hono/node-server');
  const app = new Hono();
  if (isFloodgate(subject))
    app.use('*', (await import('floodgate/http/hono')).floodgateHono(await floodgateOptions(subject)));
  if (subject === 'noop') app.use('*', async (_c, next) => void (await next()));
  // As floodgate's adapter does under @hono/node-server: on node's response, which Hono's reaches.
  if (subject === 'fixed')
    app.use(
      '*',
      async (c, next) =>
        void (fixedConnect(undefined, (c.env as { outgoing: ServerResponse }).outgoing, () => {}), await next()),
    );
  if (subject === 'floor')
    app.use(
      '*',
      async (c, next) =>
        void (floorConnect(undefined, (c.env as { outgoing: ServerResponse }).outgoing, () => {}), await next()),
    );
  app.get('/', (c) => c.text('ok'));
  return createAdaptorServer({ fetch: app.fetch }) as ReturnType<typeof createServer>;
}

/** Fastify listens itself; the others return a node server. */
async function serveFastify(subject: Subject): Promise<number> {
  const { default: Fastify } = await import('fastify');
  const app = Fastify();
  if (isFloodgate(subject))
    await app.register((await import('floodgate/http/fastify')).floodgateFastify, await floodgateOptions(subject));
  if (subject === 'peer')
    await app.register((await import('@fastify/rate-limit')).default, { max: HUGE, timeWindow: 60_000 });
  if (subject === 'noop') app.addHook('onRequest', (_request, _reply, done) => done());
  if (subject === 'fixed') {
    app.addHook('onRequest', (_request, reply, done) => {
      for (const [name, value] of FIXED_HEADERS) void reply.header(name, value);
      done();
    });
  }
  if (subject === 'floor') {
    app.addHook('onRequest', (_request, reply, done) => {
      floor.headers((name, value) => reply.header(name, value));
      done();
    });
  }
  app.get('/', async () => 'ok');
  await app.listen({ port: 0, host: '127.0.0.1' });
  return (app.server.address() as AddressInfo).port;
}

async function serve(cell: string): Promise<void> {
  const [framework, subject] = cell.split(':') as [Framework, Subject];
  let port: number;
  if (framework === 'fastify') {
    port = await serveFastify(subject);
  } else {
    const make = { node: serveNode, express: serveExpress, koa: serveKoa, hono: serveHono }[framework];
    const server = await make(subject);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  }
  // The driver asks for this process's CPU time around each load, a figure machine load disturbs less than req/s.
  process.on('message', () => process.send!(process.cpuUsage()));
  process.stdout.write(`${JSON.stringify({ port })}\n`);
}

// ---- driver (parent side) ----

interface Load {
  requestsPerSecond: number;
  /** Server CPU time (user + system) per request, in microseconds. */
  cpuUsPerRequest: number;
  non2xx: number;
  errors: number;
}

/** What a load generator reports of one load. */
type ClientResult = Omit<Load, 'cpuUsPerRequest'> & { total: number };

/** A load generator: loads `port` with `connections` keep-alive connections for `seconds`. */
type Client = (port: number, seconds: number, connections: number) => Promise<ClientResult>;

/** Whether `command` is on the PATH. */
function onPath(command: string): boolean {
  return (process.env.PATH ?? '').split(delimiter).some((dir) => dir !== '' && existsSync(join(dir, command)));
}

/**
 * Where servers and the load generator run: with two or more CPUs and `taskset`, servers on
 * CPU 0 and the load generator on the others, so that they do not take turns on one core.
 */
interface Placement {
  server: readonly string[];
  client: readonly string[];
}

function placement(pin: boolean): Placement {
  if (!pin || availableParallelism() < 2 || !onPath('taskset')) return { server: [], client: [] };
  return { server: ['taskset', '-c', '0'], client: ['taskset', '-c', `1-${availableParallelism() - 1}`] };
}

/** Spawns `argv` behind the `prefix` (a taskset, or nothing). */
function spawnPlaced(
  prefix: readonly string[],
  argv: readonly string[],
  options: Parameters<typeof spawn>[2],
): ChildProcess {
  const [command, ...args] = [...prefix, ...argv] as [string, ...string[]];
  return spawn(command, args, options);
}

function startServer(cell: string, place: Placement): Promise<{ child: ChildProcess; port: number }> {
  return new Promise((resolve, reject) => {
    const child = spawnPlaced(place.server, [process.execPath, ...CHILD_FLAGS, SELF, '--serve', cell], {
      stdio: ['ignore', 'pipe', 'inherit', 'ipc'],
    });
    let out = '';
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      out += chunk;
      const line = out.split('\n').find((l) => l.startsWith('{'));
      if (line !== undefined) resolve({ child, port: (JSON.parse(line) as { port: number }).port });
    });
    child.on('exit', (code) => reject(new Error(`server ${cell} exited with ${code}`)));
  });
}

/** The server's CPU time so far, in microseconds. */
function cpuOf(child: ChildProcess): Promise<number> {
  return new Promise((resolve) => {
    child.once('message', (m) => resolve((m as NodeJS.CpuUsage).user + (m as NodeJS.CpuUsage).system));
    child.send('cpu');
  });
}

/** Loads the server for `seconds` and measures requests/s and its CPU time per request. */
async function load(
  client: Client,
  server: { child: ChildProcess; port: number },
  seconds: number,
  connections: number,
): Promise<Load> {
  const before = await cpuOf(server.child);
  const r = await client(server.port, seconds, connections);
  const cpuUs = (await cpuOf(server.child)) - before;
  return { ...r, cpuUsPerRequest: cpuUs / Math.max(1, r.total) };
}

/** Runs `argv` to its end and returns what it printed on standard output. */
function output(prefix: readonly string[], argv: readonly string[]): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawnPlaced(prefix, argv, { stdio: ['ignore', 'pipe', 'ignore'] });
    let out = '';
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
    child.on('close', (code) => resolve({ code, out }));
  });
}

/** The autocannon CLI (in its own process), read from its JSON summary. */
function autocannon(place: Placement): Client {
  const bin = fileURLToPath(import.meta.resolve('autocannon/autocannon.js'));
  return async (port, seconds, connections) => {
    const { code, out } = await output(place.client, [
      process.execPath,
      bin,
      '-c',
      String(connections),
      '-d',
      String(seconds),
      '--json',
      `http://127.0.0.1:${port}/`,
    ]);
    try {
      const r = JSON.parse(out) as { requests: { average: number; total: number }; non2xx: number; errors: number };
      return { requestsPerSecond: r.requests.average, total: r.requests.total, non2xx: r.non2xx, errors: r.errors };
    } catch {
      throw new Error(`autocannon exited with ${code}: ${out.slice(0, 200)}`);
    }
  };
}

/** wrk (one thread), read from its text summary: a C load generator that leaves the server more of the machine than autocannon does. */
function wrk(place: Placement): Client {
  return async (port, seconds, connections) => {
    const { code, out } = await output(place.client, [
      'wrk',
      '-t1',
      `-c${connections}`,
      `-d${seconds}s`,
      `http://127.0.0.1:${port}/`,
    ]);
    const total = /(\d+) requests in/.exec(out);
    const rate = /Requests\/sec:\s+([\d.]+)/.exec(out);
    if (total === null || rate === null) throw new Error(`wrk exited with ${code}: ${out.slice(0, 200)}`);
    const non2xx = Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0);
    const socket = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
    const errors = socket === null ? 0 : socket.slice(1).reduce((sum, n) => sum + Number(n), 0);
    return { requestsPerSecond: Number(rate[1]), total: Number(total[1]), non2xx, errors };
  };
}

/**
 * Measures one framework's cells: starts all their servers, warms each, then loads them in
 * alternating order (A B C, C B A, ...) so that drift in machine load falls on every cell alike.
 * Round `i` of every cell is measured within a few seconds of the others', so ratios are taken
 * round by round.
 */
async function measureFramework(cells: readonly string[], o: RunOptions, results: Map<string, Load[]>): Promise<void> {
  const servers = await Promise.all(cells.map((cell) => startServer(cell, o.place)));
  try {
    for (const s of servers) await o.client(s.port, o.warmupSeconds, o.connections);
    for (let round = 0; round < o.rounds; round++) {
      const order = cells.map((_, i) => i);
      if (round % 2 === 1) order.reverse();
      for (const i of order) {
        const l = await load(o.client, servers[i]!, o.seconds, o.connections);
        results.set(cells[i]!, [...(results.get(cells[i]!) ?? []), l]);
        console.error(
          `${cells[i]!.padEnd(18)} ${Math.round(l.requestsPerSecond)} req/s  ${l.cpuUsPerRequest.toFixed(1)} µs CPU/req`,
        );
      }
    }
  } finally {
    for (const s of servers) {
      s.child.removeAllListeners('exit');
      s.child.kill();
    }
  }
}

interface RunOptions {
  warmupSeconds: number;
  seconds: number;
  rounds: number;
  connections: number;
  /** Also measure each framework with a middleware that does nothing. */
  noop: boolean;
  /** Also measure floodgate with its draft headers off (`draftHeaders: false`). */
  quiet: boolean;
  /** Also measure the framework with the two draft headers set to constants by a middleware, and no limiter. */
  fixed: boolean;
  /** Also measure floodgate with `remaining` counting down, beside its floor (the same headers, no limiter). */
  counting: boolean;
  client: Client;
  place: Placement;
}

function cellsOf(framework: Framework, o: Pick<RunOptions, 'noop' | 'quiet' | 'fixed' | 'counting'>): string[] {
  const cells = [`${framework}:bare`, `${framework}:floodgate`];
  if (PEERS[framework] !== undefined) cells.push(`${framework}:peer`);
  if (o.noop) cells.push(`${framework}:noop`);
  if (o.quiet) cells.push(`${framework}:quiet`);
  if (o.fixed) cells.push(`${framework}:fixed`);
  if (o.counting) cells.push(`${framework}:counting`, `${framework}:floor`);
  return cells;
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** The ratios of `a`'s requests/s to `b`'s, round by round: their median, lowest and highest. */
function pairedRatios(
  a: readonly Load[] | undefined,
  b: readonly Load[] | undefined,
): { median: number; min: number; max: number } | undefined {
  if (a === undefined || b === undefined) return undefined;
  const ratios = a.map((l, i) => l.requestsPerSecond / b[i]!.requestsPerSecond);
  return { median: median(ratios), min: Math.min(...ratios), max: Math.max(...ratios) };
}

function printTable(results: Map<string, Load[]>, o: Pick<RunOptions, 'rounds'>): void {
  const fmt = (n: number | undefined, digits = 0): string =>
    n === undefined ? '-' : n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
  const ratio = (a: Load[] | undefined, b: Load[] | undefined): string => {
    const r = pairedRatios(a, b);
    return r === undefined ? '-' : `${r.median.toFixed(3)}x (${r.min.toFixed(2)}-${r.max.toFixed(2)})`;
  };
  const rows = [
    [
      'framework',
      'bare req/s',
      'floodgate',
      'fg/bare',
      'peer',
      'peer req/s',
      'fg/peer',
      'noop/bare',
      'quiet/bare',
      'fixed/bare',
      'CPU µs/req bare',
      'floodgate',
      'peer',
    ],
  ];
  for (const f of FRAMEWORKS) {
    const loads = (s: Subject): Load[] | undefined => results.get(`${f}:${s}`);
    const rps = (s: Subject): number | undefined =>
      loads(s) === undefined ? undefined : median(loads(s)!.map((l) => l.requestsPerSecond));
    const cpu = (s: Subject): number | undefined =>
      loads(s) === undefined ? undefined : median(loads(s)!.map((l) => l.cpuUsPerRequest));
    if (loads('bare') === undefined) continue;
    rows.push([
      f,
      fmt(rps('bare')),
      fmt(rps('floodgate')),
      ratio(loads('floodgate'), loads('bare')),
      PEERS[f] ?? '-',
      fmt(rps('peer')),
      ratio(loads('floodgate'), loads('peer')),
      ratio(loads('noop'), loads('bare')),
      ratio(loads('quiet'), loads('bare')),
      ratio(loads('fixed'), loads('bare')),
      fmt(cpu('bare'), 1),
      fmt(cpu('floodgate'), 1),
      fmt(cpu('peer'), 1),
    ]);
  }
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  for (const r of rows)
    console.log(r.map((c, i) => (i === 0 || i === 4 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  '));
  console.log(
    `Requests/s are medians of ${o.rounds} rounds. Each ratio is the median of the rounds' own ratios (both cells measured`,
  );
  console.log('seconds apart), with the lowest and highest round in brackets; above 1x favours floodgate.');
  printCounting(results);
  for (const [cell, loads] of results) {
    if (loads.some((l) => l.non2xx > 0 || l.errors > 0))
      console.log(`warning: ${cell} had non-2xx responses or errors`);
  }
}

/** The `--counting` table: floodgate counting down beside the bare framework and beside its floor. */
function printCounting(results: Map<string, Load[]>): void {
  const rows = [
    ['framework', 'bare req/s', 'floor req/s', 'counting req/s', 'counting/bare', 'counting/floor', 'floor/bare'],
  ];
  const ratio = (a: Load[] | undefined, b: Load[] | undefined): string => {
    const r = pairedRatios(a, b);
    return r === undefined ? '-' : `${r.median.toFixed(3)}x (${r.min.toFixed(2)}-${r.max.toFixed(2)})`;
  };
  for (const f of FRAMEWORKS) {
    const loads = (s: Subject): Load[] | undefined => results.get(`${f}:${s}`);
    if (loads('counting') === undefined || loads('bare') === undefined) continue;
    const rps = (s: Subject): string =>
      Math.round(median(loads(s)!.map((l) => l.requestsPerSecond))).toLocaleString('en-US');
    rows.push([
      f,
      rps('bare'),
      rps('floor'),
      rps('counting'),
      ratio(loads('counting'), loads('bare')),
      ratio(loads('counting'), loads('floor')),
      ratio(loads('floor'), loads('bare')),
    ]);
  }
  if (rows.length === 1) return;
  console.log('');
  console.log(
    `With remaining counting down on every request (a fixed window of ${COUNTING_LIMIT} per hour), and its floor:`,
  );
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  for (const r of rows)
    console.log(r.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  '));
}

async function main(): Promise<void> {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      serve: { type: 'string' },
      duration: { type: 'string', default: '1' },
      warmup: { type: 'string', default: '2' },
      rounds: { type: 'string', default: '9' },
      connections: { type: 'string', default: '10' },
      client: { type: 'string' },
      'no-pin': { type: 'boolean', default: false },
      noop: { type: 'boolean', default: false },
      quiet: { type: 'boolean', default: false },
      fixed: { type: 'boolean', default: false },
      counting: { type: 'boolean', default: false },
    },
  });
  if (values.serve !== undefined) return serve(values.serve);
  const place = placement(!values['no-pin']);
  const clientName = values.client ?? (onPath('wrk') ? 'wrk' : 'autocannon');
  if (clientName !== 'wrk' && clientName !== 'autocannon')
    throw new Error(`--client must be wrk or autocannon, got ${clientName}`);
  if (clientName === 'wrk' && !onPath('wrk'))
    throw new Error('--client wrk: wrk is not on the PATH (apt-get install -y wrk)');
  const o: RunOptions = {
    warmupSeconds: Number(values.warmup),
    seconds: Number(values.duration),
    rounds: Number(values.rounds),
    connections: Number(values.connections),
    noop: values.noop,
    quiet: values.quiet,
    fixed: values.fixed,
    counting: values.counting,
    client: clientName === 'wrk' ? wrk(place) : autocannon(place),
    place,
  };
  console.error(
    `load generator: ${clientName}; ${place.server.length > 0 ? 'servers on CPU 0, the load generator on the others' : 'not pinned to CPUs'}`,
  );
  const results = new Map<string, Load[]>();
  for (const f of FRAMEWORKS) {
    if (positionals.length === 0 || positionals.some((x) => f.includes(x)))
      await measureFramework(cellsOf(f, o), o, results);
  }
  printTable(results, o);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
