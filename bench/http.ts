/**
 * HTTP benchmark: each framework bare, with floodgate (an in-memory limit that admits everything),
 * and with its own rate-limit peer (express-rate-limit, @fastify/rate-limit), loaded by autocannon
 * over loopback. With `--noop`, also with a middleware that does nothing, which shows what the
 * framework itself charges for one more middleware (for Hono, leaving its one-handler fast path). With `--quiet`, also
 * floodgate with its draft headers off, which shows what writing (and reading) the two headers costs. Every server runs in its own child process (this file, with `--serve`); autocannon
 * runs in another. It prints requests/s and ratios; nothing is asserted.
 *
 *   node --conditions=floodgate-source --import tsx bench/http.ts [--duration 2] [--rounds 2] [--warmup 1] [--noop] [--quiet] [filter...]
 *
 * About 5 s per cell by default (1 s warm-up, then 2 rounds of 2 s), so about 75 s in all.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

type Framework = 'node' | 'express' | 'fastify' | 'koa' | 'hono';
type Subject = 'bare' | 'floodgate' | 'peer' | 'noop' | 'quiet' | 'fixed';

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

/** Whether `subject` runs floodgate: with its default headers, or (`quiet`) with the draft headers off. */
const isFloodgate = (subject: Subject): boolean => subject === 'floodgate' || subject === 'quiet';

/** floodgate's options for `subject`: `quiet` turns the draft headers off, to show what writing them costs. */
async function floodgateOptions(subject: Subject) {
  return { limiter: await floodgateLimiter(), draftHeaders: subject !== 'quiet' };
}

/** A Connect-style middleware that does nothing. */
function noopConnect(_req: unknown, _res: unknown, next: () => void): void {
  next();
}

function hello(_req: IncomingMessage, res: ServerResponse): void {
  res.setHeader('content-type', 'text/plain');
  res.end('ok');
}

async function serveNode(subject: Subject): Promise<ReturnType<typeof createServer>> {
  if (subject === 'bare') return createServer(hello);
  if (subject === 'fixed') {
    // Only bench/http-instructions.ts serves this: the draft headers' own cost, with no limiter.
    return createServer((req, res) => {
      res.setHeader('ratelimit-policy', '"default";q=1000000000000;w=1');
      res.setHeader('ratelimit', '"default";r=999999999999;t=1');
      hello(req, res);
    });
  }
  if (subject === 'noop') return createServer((req, res) => noopConnect(req, res, () => hello(req, res)));
  const { floodgateNode } = await import('floodgate/http');
  const limit = floodgateNode(await floodgateOptions(subject));
  return createServer((req, res) => limit(req, res, () => hello(req, res)));
}

async function serveExpress(subject: Subject): Promise<ReturnType<typeof createServer>> {
  const { default: express } = await import('express');
  const app = express();
  if (isFloodgate(subject)) app.use((await import('floodgate/http')).floodgateExpress(await floodgateOptions(subject)));
  if (subject === 'peer') app.use((await import('express-rate-limit')).rateLimit({ windowMs: 60_000, limit: HUGE }));
  if (subject === 'noop') app.use(noopConnect);
  app.get('/', (_req, res) => void res.send('ok'));
  return createServer(app);
}

async function serveKoa(subject: Subject): Promise<ReturnType<typeof createServer>> {
  const { default: Koa } = await import('koa');
  const app = new Koa();
  if (isFloodgate(subject)) app.use((await import('floodgate/http')).floodgateKoa(await floodgateOptions(subject)));
  if (subject === 'noop') app.use((_ctx, next) => next());
  app.use((ctx) => void (ctx.body = 'ok'));
  return createServer(app.callback());
}

async function serveHono(subject: Subject): Promise<ReturnType<typeof createServer>> {
  const { Hono } = await import('hono');
  const { createAdaptorServer } = await import('@hono/node-server');
  const app = new Hono();
  if (isFloodgate(subject)) app.use('*', (await import('floodgate/http')).floodgateHono(await floodgateOptions(subject)));
  if (subject === 'noop') app.use('*', async (_c, next) => void (await next()));
  app.get('/', (c) => c.text('ok'));
  return createAdaptorServer({ fetch: app.fetch }) as ReturnType<typeof createServer>;
}

/** Fastify listens itself; the others return a node server. */
async function serveFastify(subject: Subject): Promise<number> {
  const { default: Fastify } = await import('fastify');
  const app = Fastify();
  if (isFloodgate(subject)) await app.register((await import('floodgate/http')).floodgateFastify, await floodgateOptions(subject));
  if (subject === 'peer') await app.register((await import('@fastify/rate-limit')).default, { max: HUGE, timeWindow: 60_000 });
  if (subject === 'noop') app.addHook('onRequest', (_request, _reply, done) => done());
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

function startServer(cell: string): Promise<{ child: ChildProcess; port: number }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...CHILD_FLAGS, SELF, '--serve', cell], { stdio: ['ignore', 'pipe', 'inherit', 'ipc'] });
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
async function load(server: { child: ChildProcess; port: number }, seconds: number, connections: number): Promise<Load> {
  const before = await cpuOf(server.child);
  const r = await autocannon(server.port, seconds, connections);
  const cpuUs = (await cpuOf(server.child)) - before;
  return { ...r, cpuUsPerRequest: cpuUs / Math.max(1, r.total) };
}

/** Runs the autocannon CLI (in its own process) and reads its JSON summary. */
function autocannon(port: number, seconds: number, connections: number): Promise<Omit<Load, 'cpuUsPerRequest'> & { total: number }> {
  const bin = fileURLToPath(import.meta.resolve('autocannon/autocannon.js'));
  const args = [bin, '-c', String(connections), '-d', String(seconds), '--json', `http://127.0.0.1:${port}/`];
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'ignore'] });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
    child.on('close', (code) => {
      try {
        const r = JSON.parse(out) as { requests: { average: number; total: number }; non2xx: number; errors: number };
        resolve({ requestsPerSecond: r.requests.average, total: r.requests.total, non2xx: r.non2xx, errors: r.errors });
      } catch {
        reject(new Error(`autocannon exited with ${code}: ${out.slice(0, 200)}`));
      }
    });
  });
}

/**
 * Measures one framework's cells: starts all their servers, warms each, then loads them in
 * alternating order (A B C, C B A, ...) so that drift in machine load falls on every cell alike.
 */
async function measureFramework(cells: readonly string[], o: RunOptions, results: Map<string, Load[]>): Promise<void> {
  const servers = await Promise.all(cells.map((cell) => startServer(cell)));
  try {
    for (const s of servers) await autocannon(s.port, o.warmupSeconds, o.connections);
    for (let round = 0; round < o.rounds; round++) {
      const order = cells.map((_, i) => i);
      if (round % 2 === 1) order.reverse();
      for (const i of order) {
        const l = await load(servers[i]!, o.seconds, o.connections);
        results.set(cells[i]!, [...(results.get(cells[i]!) ?? []), l]);
        console.error(`${cells[i]!.padEnd(18)} ${Math.round(l.requestsPerSecond)} req/s  ${l.cpuUsPerRequest.toFixed(1)} µs CPU/req`);
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
}

function cellsOf(framework: Framework, o: RunOptions): string[] {
  const cells = [`${framework}:bare`, `${framework}:floodgate`];
  if (PEERS[framework] !== undefined) cells.push(`${framework}:peer`);
  if (o.noop) cells.push(`${framework}:noop`);
  if (o.quiet) cells.push(`${framework}:quiet`);
  return cells;
}

function printTable(results: Map<string, Load[]>): void {
  const mean = (cell: string, of: (l: Load) => number): number | undefined => {
    const loads = results.get(cell);
    return loads === undefined ? undefined : loads.reduce((s, l) => s + of(l), 0) / loads.length;
  };
  const fmt = (n: number | undefined, digits = 0): string => (n === undefined ? '-' : n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits }));
  const ratio = (a: number | undefined, b: number | undefined): string => (a === undefined || b === undefined ? '-' : `${(a / b).toFixed(3)}x`);
  const rows = [['framework', 'bare req/s', 'floodgate', 'fg/bare', 'peer', 'peer req/s', 'fg/peer', 'noop req/s', 'quiet req/s', 'quiet/bare', 'CPU µs/req bare', 'floodgate', 'peer', 'noop', 'quiet', 'bare/fg CPU']];
  for (const f of FRAMEWORKS) {
    const rps = (s: Subject): number | undefined => mean(`${f}:${s}`, (l) => l.requestsPerSecond);
    const cpu = (s: Subject): number | undefined => mean(`${f}:${s}`, (l) => l.cpuUsPerRequest);
    if (rps('bare') === undefined) continue;
    rows.push([f, fmt(rps('bare')), fmt(rps('floodgate')), ratio(rps('floodgate'), rps('bare')), PEERS[f] ?? '-', fmt(rps('peer')), ratio(rps('floodgate'), rps('peer')), fmt(rps('noop')), fmt(rps('quiet')), ratio(rps('quiet'), rps('bare')), fmt(cpu('bare'), 1), fmt(cpu('floodgate'), 1), fmt(cpu('peer'), 1), fmt(cpu('noop'), 1), fmt(cpu('quiet'), 1), ratio(cpu('bare'), cpu('floodgate'))]);
  }
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  for (const r of rows) console.log(r.map((c, i) => (i === 0 || i === 4 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  '));
  console.log('Ratios above 1x favour floodgate. bare/fg CPU is the bare server\'s CPU time per request over floodgate\'s:');
  console.log('on a busy machine it is steadier than req/s, which the load generator sharing the cores also limits.');
  for (const [cell, loads] of results) {
    if (loads.some((l) => l.non2xx > 0 || l.errors > 0)) console.log(`warning: ${cell} had non-2xx responses or errors`);
  }
}

async function main(): Promise<void> {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      serve: { type: 'string' },
      duration: { type: 'string', default: '2' },
      warmup: { type: 'string', default: '1' },
      rounds: { type: 'string', default: '2' },
      connections: { type: 'string', default: '10' },
      noop: { type: 'boolean', default: false },
      quiet: { type: 'boolean', default: false },
    },
  });
  if (values.serve !== undefined) return serve(values.serve);
  const o: RunOptions = { warmupSeconds: Number(values.warmup), seconds: Number(values.duration), rounds: Number(values.rounds), connections: Number(values.connections), noop: values.noop, quiet: values.quiet };
  const results = new Map<string, Load[]>();
  for (const f of FRAMEWORKS) {
    if (positionals.length === 0 || positionals.some((x) => f.includes(x))) await measureFramework(cellsOf(f, o), o, results);
  }
  printTable(results);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
