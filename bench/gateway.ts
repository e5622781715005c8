/**
 * Gateway benchmark: `floodgate serve` beside the same machine's alternatives, each a reverse proxy
 * in front of one upstream, loaded by wrk over loopback in one run:
 *
 * - `undici`: a plain undici proxy of a few dozen lines, no limits (the floor of any Node proxy);
 * - `fastify`: @fastify/http-proxy with @fastify/rate-limit (a limit never reached);
 * - `nginx`: Debian's nginx with `limit_req` (a rate never reached), its own temp prefix;
 * - `floodgate-none`: floodgate serve with a route and no rules;
 * - `floodgate`: floodgate serve with two rules that admit everything (per client and per route);
 * - `floodgate-adaptive`: the same behind an adaptive concurrency limit that never sheds (its floor
 *   is above wrk's connections), so every request takes a slot and feeds the estimator;
 * - `floodgate-redis`: the same on a Redis started for the run (when `redis-server` is on the PATH).
 *
 * Every proxy runs in its own process pinned to CPU 0 (when `taskset` and 2+ CPUs exist), the
 * upstream and wrk on the others. Cells run in short alternating rounds; each figure is the median
 * of its rounds. It prints requests/s, p99 latency, ratios, and then (`--keys N`, default
 * 1,000,000; 0 skips it) the gateway's RSS growth per key after N distinct clients. Nothing is asserted.
 *
 *   node --conditions=floodgate-source --import tsx bench/gateway.ts [--duration 2] [--rounds 5]
 *        [--connections 50] [--keys 1000000] [--only name,name]
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const SELF = fileURLToPath(import.meta.url);
const ROOT = join(SELF, '..', '..');
const MAIN = join(ROOT, 'packages', 'server', 'src', 'cli', 'main.ts');
const HUGE = 1e12;
const PIN = availableParallelism() >= 2 && spawnSync('taskset', ['-V']).status === 0;

// ---- child side: the upstream and the Node peers ----

async function serveChild(kind: string, upstreamPort: number): Promise<number> {
  if (kind === 'upstream') return listen(createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '2' }).end('ok')));
  if (kind === 'undici') return listen(await plainUndiciProxy(upstreamPort));
  const { default: Fastify } = await import('fastify');
  const app = Fastify();
  await app.register((await import('@fastify/rate-limit')).default, { max: HUGE, timeWindow: 60_000 });
  await app.register((await import('@fastify/http-proxy')).default, { upstream: `http://127.0.0.1:${upstreamPort}` });
  await app.listen({ port: 0, host: '127.0.0.1' });
  return (app.server.address() as AddressInfo).port;
}

/** The plain undici proxy: what a few dozen lines of Node do with no limits, headers passed as they are. */
async function plainUndiciProxy(upstreamPort: number): Promise<ReturnType<typeof createServer>> {
  const { Pool } = await import('undici');
  const pool = new Pool(`http://127.0.0.1:${upstreamPort}`, { connections: 256, keepAliveTimeout: 4_000 });
  return createServer(async (req: IncomingMessage, res: ServerResponse) => {
    try {
      const headers = { ...req.headers };
      delete headers.connection;
      delete headers.host;
      const hasBody = req.headers['content-length'] !== undefined || req.headers['transfer-encoding'] !== undefined;
      const reply = await pool.request({ path: req.url ?? '/', method: req.method as 'GET', headers, body: hasBody ? req : null });
      const out = { ...reply.headers };
      delete out.connection;
      delete out['keep-alive'];
      delete out['transfer-encoding'];
      res.writeHead(reply.statusCode, out);
      await pipeline(reply.body, res);
    } catch {
      if (!res.headersSent) res.writeHead(502).end();
      else res.destroy();
    }
  });
}

function listen(server: ReturnType<typeof createServer>): Promise<number> {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));
}

// ---- parent side ----

interface Running {
  readonly name: string;
  readonly port: number;
  /** The admin port of a floodgate gateway (metrics); 0 for the others. */
  readonly adminPort: number;
  readonly child: ChildProcess;
}

function pinned(cpu: string, command: string, args: readonly string[]): [string, string[]] {
  return PIN ? ['taskset', ['-c', cpu, command, ...args]] : [command, [...args]];
}

/** Starts a process and resolves with the port it reports (`PORT n` or floodgate's `listening` log line). */
function startProcess(name: string, cpu: string, command: string, args: readonly string[]): Promise<Running> {
  const [cmd, argv] = pinned(cpu, command, args);
  const child = spawn(cmd, argv, { stdio: ['ignore', 'pipe', 'pipe'] });
  return new Promise((resolve, reject) => {
    let out = '';
    let err = '';
    const timer = setTimeout(() => reject(new Error(`${name} did not start: ${out}${err}`)), 20_000);
    child.stderr!.on('data', (c: Buffer) => (err += c.toString()));
    child.stdout!.on('data', (c: Buffer) => {
      out += c.toString();
      const m = /PORT (\d+)/.exec(out) ?? /"port":(\d+).*"msg":"listening"/.exec(out);
      if (m !== null) {
        clearTimeout(timer);
        resolve({ name, port: Number(m[1]), adminPort: Number(/"adminPort":(\d+)/.exec(out)?.[1] ?? 0), child });
      }
    });
    child.once('exit', (code) => reject(new Error(`${name} exited (${String(code)}): ${err}`)));
  });
}

function startNode(name: string, kind: string, upstreamPort: number): Promise<Running> {
  const cpu = kind === 'upstream' ? '1' : '0';
  return startProcess(name, cpu, process.execPath, ['--conditions=floodgate-source', '--import', 'tsx', SELF, '--serve', kind, '--upstream-port', String(upstreamPort)]);
}

async function startFloodgate(name: string, dir: string, yaml: string): Promise<Running> {
  const file = join(dir, `${name}.yaml`);
  await writeFile(file, yaml);
  return startProcess(name, '0', process.execPath, ['--conditions=floodgate-source', '--import', 'tsx', MAIN, 'serve', '--config', file, '--port', '0', '--admin-port', '0', '--no-watch']);
}

function floodgateYaml(upstreamPort: number, rules: 'none' | 'admit-all' | 'admit-all-adaptive' | 'keys', store = 'store: { type: memory }'): string {
  const admitAll = `
    rules:
      - name: per-client
        policy: { algorithm: tokenBucket, capacity: ${HUGE}, refillPerSecond: ${HUGE} }
        key: { type: ip }
      - name: per-route
        policy: { algorithm: slidingWindowCounter, limit: ${HUGE}, windowMs: 60000 }
        key: { type: route }`;
  // Every request adds a key to the shadow rule, and the route rule refuses it with a 429 at
  // once: the keys are held by the gateway without a round trip upstream per key.
  const keys = `
    rules:
      - name: per-key
        mode: shadow
        policy: { algorithm: tokenBucket, capacity: 100, refillPerSecond: 0.001 }
        key: { type: query, name: k }
      - name: closed
        policy: { algorithm: fixedWindow, limit: 1, windowMs: 3600000 }
        key: { type: route }`;
  // The same rules behind an adaptive concurrency limit whose floor (64) is above wrk's
  // connections: every request takes and releases a slot and feeds the estimator, none is shed.
  const adaptive = `${admitAll}
    adaptive: { minLimit: 64, initialLimit: 64 }`;
  const body = rules === 'none' ? '' : rules === 'admit-all' ? admitAll : rules === 'admit-all-adaptive' ? adaptive : keys;
  return `${store}\nroutes:\n  - name: all\n    upstream: http://127.0.0.1:${upstreamPort}${body}\n`;
}

async function startNginx(dir: string, upstreamPort: number): Promise<Running> {
  const prefix = join(dir, 'nginx');
  await mkdir(join(prefix, 'tmp'), { recursive: true });
  const port = await freePort();
  const conf = `worker_processes 1;
pid ${prefix}/nginx.pid;
error_log ${prefix}/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path ${prefix}/tmp/body; proxy_temp_path ${prefix}/tmp/proxy; fastcgi_temp_path ${prefix}/tmp/fcgi;
  uwsgi_temp_path ${prefix}/tmp/uwsgi; scgi_temp_path ${prefix}/tmp/scgi;
  limit_req_zone $binary_remote_addr zone=perip:10m rate=100000000r/s;
  upstream backend { server 127.0.0.1:${upstreamPort}; keepalive 64; }
  server {
    listen 127.0.0.1:${port};
    location / {
      limit_req zone=perip burst=1000000 nodelay;
      proxy_pass http://backend;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
    }
  }
}
`;
  await writeFile(join(prefix, 'nginx.conf'), conf);
  const [cmd, argv] = pinned('0', '/usr/sbin/nginx', ['-p', prefix, '-e', join(prefix, 'error.log'), '-c', join(prefix, 'nginx.conf'), '-g', 'daemon off;']);
  const child = spawn(cmd, argv, { stdio: 'ignore' });
  await waitForPort(port);
  return { name: 'nginx', port, adminPort: 0, child };
}

async function freePort(): Promise<number> {
  const server = createServer();
  const port = await listen(server);
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

async function waitForPort(port: number): Promise<void> {
  for (let i = 0; i < 100; i++) {
    try {
      await fetch(`http://127.0.0.1:${port}/`);
      return;
    } catch {
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  throw new Error(`nothing listens on ${port}`);
}

interface WrkResult {
  readonly rps: number;
  readonly p99Ms: number;
  readonly non2xx: number;
  /** CPU time the proxy's processes spent per request, in µs (user + system): steady however loaded the machine is. */
  readonly cpuUsPerRequest: number;
}

/** The CPU ticks (user + system) a process and its children processes have used, from /proc. */
function cpuTicks(pid: number): number {
  let total = 0;
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  total += Number(fields[11]) + Number(fields[12]);
  let children = '';
  try {
    children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim();
  } catch {
    // No children list: count the process alone.
  }
  for (const child of children === '' ? [] : children.split(' ')) total += cpuTicks(Number(child));
  return total;
}

const TICK_US = 1_000_000 / Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim() || 100);

function wrk(port: number, seconds: number, connections: number, script?: string, pid?: number): WrkResult {
  const args = ['-t1', `-c${connections}`, `-d${seconds}s`, '--latency', ...(script === undefined ? [] : ['-s', script]), `http://127.0.0.1:${port}/bench`];
  const [cmd, argv] = pinned('1', 'wrk', args);
  const ticksBefore = pid === undefined ? 0 : cpuTicks(pid);
  const r = spawnSync(cmd, argv, { encoding: 'utf8' });
  const ticks = pid === undefined ? NaN : cpuTicks(pid) - ticksBefore;
  const text = r.stdout;
  const requests = Number(/(\d+) requests in/.exec(text)?.[1] ?? NaN);
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(text)?.[1] ?? NaN);
  const p99 = /99%\s+([\d.]+)(us|ms|s)/.exec(text);
  const p99Ms = p99 === null ? NaN : Number(p99[1]) * (p99[2] === 'us' ? 0.001 : p99[2] === 's' ? 1000 : 1);
  const non2xx = Number(/Non-2xx or 3xx responses: (\d+)/.exec(text)?.[1] ?? 0);
  return { rps, p99Ms, non2xx, cpuUsPerRequest: (ticks * TICK_US) / requests };
}

const median = (xs: readonly number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

function rssKb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? NaN);
}

/** Sends `keys` requests, each with a key of its own, and returns the gateway's RSS growth per key. */
async function rssPerKey(dir: string, upstreamPort: number, keys: number, connections: number): Promise<{ bytesPerKey: number; seconds: number }> {
  const gw = await startFloodgate('floodgate-keys', dir, floodgateYaml(upstreamPort, 'keys'));
  try {
    wrk(gw.port, 2, connections);
    const before = rssKb(gw.child.pid!);
    const script = join(dir, 'keys.lua');
    // One counter per wrk thread (there is one), so every request carries a new key; past `keys`
    // the requests repeat a key already held, and the run is stopped once the gateway holds them all.
    await writeFile(script, `local n = 0\nlocal limit = ${keys}\nrequest = function()\n  if n < limit then n = n + 1 end\n  return wrk.format("GET", "/bench?k=" .. n)\nend\n`);
    const started = performance.now();
    const [cmd, argv] = pinned('1', 'wrk', ['-t1', `-c${Math.min(connections, 16)}`, '-d3600s', '-s', script, `http://127.0.0.1:${gw.port}/bench`]);
    const load = spawn(cmd, argv, { stdio: 'ignore' });
    try {
      while ((await keysHeld(gw.adminPort)) < keys) await new Promise((r) => setTimeout(r, 500));
    } finally {
      load.kill('SIGTERM');
    }
    const seconds = (performance.now() - started) / 1000;
    await new Promise((r) => setTimeout(r, 500));
    return { bytesPerKey: ((rssKb(gw.child.pid!) - before) * 1024) / keys, seconds };
  } finally {
    gw.child.kill('SIGTERM');
  }
}

/** The keys the `keys` gateway holds: its shadow rule's decisions, from its metrics. */
async function keysHeld(adminPort: number): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${adminPort}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith('floodgate_decisions_total{') && l.includes('rule="per-key"') && l.includes('outcome="shadow_admitted"'));
  return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(' ') + 1));
}

async function startRedis(dir: string): Promise<{ port: number; child: ChildProcess } | undefined> {
  if (spawnSync('redis-server', ['--version']).status !== 0) return undefined;
  const port = await freePort();
  const child = spawn(...pinned('1', 'redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir]), { stdio: 'ignore' });
  await new Promise((r) => setTimeout(r, 300));
  return { port, child };
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { duration: { type: 'string', default: '2' }, rounds: { type: 'string', default: '5' }, connections: { type: 'string', default: '50' }, keys: { type: 'string', default: '1000000' }, only: { type: 'string' } } });
  const seconds = Number(values.duration);
  const rounds = Number(values.rounds);
  const connections = Number(values.connections);
  const dir = await mkdtemp(join(tmpdir(), 'floodgate-bench-gw-'));
  const running: Running[] = [];
  let redis: { port: number; child: ChildProcess } | undefined;
  try {
    const upstream = await startNode('upstream', 'upstream', 0);
    running.push(upstream);
    redis = await startRedis(dir);
    const makers: Record<string, () => Promise<Running>> = {
      undici: () => startNode('undici', 'undici', upstream.port),
      fastify: () => startNode('fastify', 'fastify', upstream.port),
      nginx: () => startNginx(dir, upstream.port),
      'floodgate-none': () => startFloodgate('floodgate-none', dir, floodgateYaml(upstream.port, 'none')),
      floodgate: () => startFloodgate('floodgate', dir, floodgateYaml(upstream.port, 'admit-all')),
      'floodgate-adaptive': () => startFloodgate('floodgate-adaptive', dir, floodgateYaml(upstream.port, 'admit-all-adaptive')),
      ...(redis === undefined ? {} : { 'floodgate-redis': () => startFloodgate('floodgate-redis', dir, floodgateYaml(upstream.port, 'admit-all', `store: { type: redis, url: "redis://127.0.0.1:${redis!.port}", timeoutMs: 1000 }`)) }),
    };
    const only = values.only?.split(',');
    const names = Object.keys(makers).filter((n) => only === undefined || only.includes(n));
    const cells: Running[] = [];
    for (const n of names) cells.push(await makers[n]!());
    running.push(...cells);
    for (const c of cells) wrk(c.port, 1, connections);
    const results = new Map<string, WrkResult[]>(cells.map((c) => [c.name, []]));
    for (let r = 0; r < rounds; r++) for (const c of cells) results.get(c.name)!.push(wrk(c.port, seconds, connections, undefined, c.child.pid));
    report(results, connections);
    const keys = Number(values.keys);
    if (keys > 0 && (only === undefined || only.includes('keys'))) {
      const { bytesPerKey, seconds: took } = await rssPerKey(dir, upstream.port, keys, connections);
      console.log(`\nRSS growth with ${keys.toLocaleString('en')} keys held (one per request, a token bucket keyed by query parameter): ${bytesPerKey.toFixed(1)} B per key (loaded in ${took.toFixed(0)} s)`);
    }
  } finally {
    for (const r of running) r.child.kill('SIGTERM');
    redis?.child.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 300));
    await rm(dir, { recursive: true, force: true });
  }
}

function report(results: Map<string, WrkResult[]>, connections: number): void {
  const rps = (n: string): number => median(results.get(n)?.map((r) => r.rps) ?? [NaN]);
  const cpu = (n: string): number => median(results.get(n)?.map((r) => r.cpuUsPerRequest) ?? [NaN]);
  const p99 = (n: string): number => median(results.get(n)?.map((r) => r.p99Ms) ?? [NaN]);
  console.log(`wrk, ${connections} connections, ${PIN ? 'proxies pinned to CPU 0, upstream and wrk to CPU 1' : 'no CPU pinning'}; medians of the rounds`);
  console.log('subject            req/s     p99 ms   CPU µs/req (min-max)   non-2xx');
  for (const [name, rs] of results) {
    const cpus = rs.map((r) => r.cpuUsPerRequest);
    const spread = `(${Math.min(...cpus).toFixed(1)}-${Math.max(...cpus).toFixed(1)})`;
    console.log(`${name.padEnd(16)} ${rps(name).toFixed(0).padStart(7)}   ${p99(name).toFixed(2).padStart(7)}   ${cpu(name).toFixed(1).padStart(10)} ${spread.padEnd(11)}   ${rs.reduce((n, r) => n + r.non2xx, 0)}`);
  }
  // Two ratios: by requests/s, and by CPU time per request (the requests/s each would reach on a core of its own).
  const ratio = (a: string, b: string): string => (results.has(a) && results.has(b) ? `${(rps(a) / rps(b)).toFixed(3)}x by req/s, ${(cpu(b) / cpu(a)).toFixed(3)}x by CPU per request` : 'n/a');
  console.log(`\nfloodgate (admit-all limits) / plain undici proxy: ${ratio('floodgate', 'undici')}`);
  console.log(`floodgate / @fastify/http-proxy + @fastify/rate-limit: ${ratio('floodgate', 'fastify')}`);
  console.log(`floodgate / nginx limit_req: ${ratio('floodgate', 'nginx')}`);
  console.log(`floodgate / floodgate with no rules: ${ratio('floodgate', 'floodgate-none')} (limits cost ${results.has('floodgate-none') ? ((cpu('floodgate') / cpu('floodgate-none') - 1) * 100).toFixed(1) : 'n/a'}% more CPU per request)`);
  if (results.has('floodgate-adaptive')) console.log(`floodgate with an adaptive concurrency limit / floodgate: ${ratio('floodgate-adaptive', 'floodgate')} (the limit costs ${((cpu('floodgate-adaptive') / cpu('floodgate') - 1) * 100).toFixed(1)}% more CPU per request)`);
  console.log(`p99 added by the limits: ${(p99('floodgate') - p99('floodgate-none')).toFixed(2)} ms; by Redis: ${(p99('floodgate-redis') - p99('floodgate')).toFixed(2)} ms`);
}

const { values: childArgs } = parseArgs({ options: { serve: { type: 'string' }, 'upstream-port': { type: 'string' } }, strict: false });
if (typeof childArgs.serve === 'string') {
  const port = await serveChild(childArgs.serve, Number(childArgs['upstream-port'] ?? 0));
  console.log(`PORT ${port}`);
} else {
  await main();
}
