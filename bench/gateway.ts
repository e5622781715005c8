/**
 * Gateway benchmark: `floodgate serve` beside peers doing the same work, each a reverse proxy in
 * front of one upstream, loaded by wrk over loopback in the same alternating rounds:
 *
 * - `undici`: node:http + an undici Pool (`pool.stream`) adding the gateway's forwarding headers
 *   (X-Forwarded-For, -Proto, -Host, Forwarded) and its RateLimit-Policy / RateLimit fields from a
 *   Map token bucket per client IP; refused, the gateway's 429, headers and problem+json body.
 *   The reference of every ratio (bench/gateway/undici-peer.ts). `undici-bare`: the same proxy
 *   with no limit and no added headers, the floor;
 * - `fastify`: @fastify/http-proxy with @fastify/rate-limit and the same forwarding headers;
 * - `nginx`: Debian's nginx-light, `limit_req` per IP, the same forwarding headers, its own temp prefix;
 * - floodgate: no rules, one per-IP token bucket, three rules, eight rules, one rule behind an
 *   adaptive concurrency limit, and one, three and eight rules on a Redis started by the run.
 *
 * Two cases (bench/gateway/cells.ts): `admit`, a limit never reached, and `refuse`, a limit that
 * refuses nearly every request (capacity 1, one token per 1,000 s; nginx 1r/m; Fastify 1 per 1,000 s).
 * Every proxy runs pinned to CPU 0 (when `taskset` and 2+ CPUs exist), the upstream, Redis and
 * wrk on CPU 1. Each round runs every cell once; each figure is the median of its rounds. CPU
 * per request is user + system time of the proxy's process and its descendants (nginx's master
 * and worker) from /proc, over the round; Redis's CPU and its `INFO commandstats` calls are read
 * the same way. Then (`--keys N`, default 1,000,000; 0 skips it) the gateway's RSS growth per key
 * after N distinct clients. Nothing is asserted.
 *
 *   npm run bench:gateway -- [--duration 2] [--rounds 5] [--connections 50] [--keys 1000000]
 *        [--only name,name] [--quiet]   (--quiet: no response samples)
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { BUCKET, CELLS, POLICY, floodgateYaml, keysYaml, type CellSpec } from './gateway/cells.js';
import { probe, runWrk, type Round } from './gateway/measure.js';
import { NGINX, writeNginxConf } from './gateway/nginx.js';
import {
  PIN,
  freePort,
  pinned,
  startProcess,
  startRedis,
  type RedisServer,
  type Running,
} from './gateway/processes.js';
import { printCase, printCells, printRedis } from './gateway/report.js';

const SELF = fileURLToPath(import.meta.url);
const ROOT = join(SELF, '..', '..');
const PEERS = join(ROOT, 'bench', 'gateway', 'peers.ts');
const MAIN = join(ROOT, 'packages', 'server', 'src', 'cli', 'main.ts');
function startPeer(
  name: string,
  kind: string,
  options: { upstreamPort: number; capacity: number; refillPerSecond: number },
): Promise<Running> {
  const args = [
    '--conditions=floodgate-source',
    '--import',
    'tsx',
    PEERS,
    '--serve',
    kind,
    '--upstream-port',
    String(options.upstreamPort),
    '--capacity',
    String(options.capacity),
    '--refill-per-second',
    String(options.refillPerSecond),
  ];
  return startProcess(name, kind === 'upstream' ? '1' : '0', process.execPath, args);
}

async function startFloodgate(name: string, dir: string, yaml: string): Promise<Running> {
  const file = join(dir, `${name}.yaml`);
  await writeFile(file, yaml);
  return startProcess(name, '0', process.execPath, [
    '--conditions=floodgate-source',
    '--import',
    'tsx',
    MAIN,
    'serve',
    '--config',
    file,
    '--port',
    '0',
    '--admin-port',
    '0',
    '--no-watch',
  ]);
}

async function startNginx(spec: CellSpec, dir: string, upstreamPort: number): Promise<Running> {
  const port = await freePort();
  const limit =
    spec.case === 'admit'
      ? { rate: '100000000r/s', burst: 1_000_000, policy: POLICY.admit, retryAfterSeconds: 1 }
      : { rate: '1r/m', burst: 0, policy: POLICY.refuse, retryAfterSeconds: 1000 };
  const args = await writeNginxConf(join(dir, spec.name), { port, upstreamPort, limit });
  const [cmd, argv] = pinned('0', NGINX, args);
  const child = spawn(cmd, argv, { stdio: 'ignore' });
  await waitForPort(port);
  return { name: spec.name, port, adminPort: 0, child };
}

function startCell(
  spec: CellSpec,
  dir: string,
  upstreamPort: number,
  redis: RedisServer | undefined,
): Promise<Running> {
  const bucket = BUCKET[spec.case];
  if (spec.kind === 'undici-bare')
    return startPeer(spec.name, 'undici', { upstreamPort, capacity: 0, refillPerSecond: 1 });
  if (spec.kind === 'undici' || spec.kind === 'fastify')
    return startPeer(spec.name, spec.kind, { upstreamPort, ...bucket });
  if (spec.kind === 'nginx') return startNginx(spec, dir, upstreamPort);
  return startFloodgate(spec.name, dir, floodgateYaml(spec, upstreamPort, redis?.port));
}

async function waitForPort(port: number): Promise<void> {
  for (let i = 0; i < 100; i++) {
    try {
      await fetch(`http://127.0.0.1:${port}/probe`);
      return;
    } catch {
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  throw new Error(`nothing listens on ${port}`);
}

function wrkCommand(port: number, seconds: number, connections: number, script?: string): [string, string[]] {
  const args = [
    '-t1',
    `-c${connections}`,
    `-d${seconds}s`,
    '--latency',
    ...(script === undefined ? [] : ['-s', script]),
    `http://127.0.0.1:${port}/bench`,
  ];
  return pinned('1', 'wrk', args);
}

/** Prints what each cell answers (and, admitted, what it sent upstream): the response samples. */
async function printSamples(cells: readonly Running[], specs: ReadonlyMap<string, CellSpec>): Promise<void> {
  console.log('\nResponse samples (one request each, before the rounds):');
  for (const c of cells) {
    const spec = specs.get(c.name)!;
    let answer = await probe(c.port, '/probe');
    if (spec.case === 'refuse') answer = await probe(c.port, '/probe');
    console.log(`\n[${c.name}] ${answer.status}\n  ${answer.headers.join('\n  ')}`);
    if (answer.status === 200) {
      const raw = JSON.parse(answer.body) as string[];
      const sent: string[] = [];
      for (let i = 0; i < raw.length; i += 2) sent.push(`${raw[i]!}: ${raw[i + 1]!}`);
      console.log(`  upstream saw: ${sent.join(' | ')}`);
    } else {
      console.log(`  body: ${answer.body}`);
    }
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      duration: { type: 'string', default: '2' },
      rounds: { type: 'string', default: '5' },
      connections: { type: 'string', default: '50' },
      keys: { type: 'string', default: '1000000' },
      only: { type: 'string' },
      quiet: { type: 'boolean', default: false },
    },
  });
  const seconds = Number(values.duration);
  const rounds = Number(values.rounds);
  const connections = Number(values.connections);
  const only = values.only?.split(',');
  const dir = await mkdtemp(join(tmpdir(), 'floodgate-bench-gw-'));
  const running: Running[] = [];
  let redis: RedisServer | undefined;
  try {
    const upstream = await startPeer('upstream', 'upstream', { upstreamPort: 0, capacity: 0, refillPerSecond: 1 });
    running.push(upstream);
    redis = await startRedis(dir, '1');
    const hasNginx = existsSync(NGINX);
    const specs = CELLS.filter(
      (s) =>
        (only === undefined || only.includes(s.name)) &&
        (s.kind !== 'nginx' || hasNginx) &&
        (s.floodgate?.redis !== true || redis !== undefined),
    );
    const cells: Running[] = [];
    for (const s of specs) cells.push(await startCell(s, dir, upstream.port, redis));
    running.push(...cells);
    const byName = new Map(specs.map((s) => [s.name, s]));
    console.log(
      `wrk -t1 -c${connections} -d${seconds}s --latency, ${rounds} rounds; ${PIN ? 'proxies pinned to CPU 0, upstream, Redis and wrk to CPU 1' : 'no CPU pinning'}; ${spawnSync('nproc', { encoding: 'utf8' }).stdout.trim()} CPUs, load average ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}`,
    );
    if (!hasNginx) console.log(`(no ${NGINX}: the nginx cells are left out; apt-get install -y nginx-light)`);
    if (redis === undefined) console.log('(no redis-server: the Redis cells are left out)');
    printCells(specs, new Set(byName.keys()));
    if (!values.quiet) await printSamples(cells, byName);
    for (const c of cells) runWrk({ command: wrkCommand(c.port, 1, connections), pid: c.child.pid! });
    const results = new Map<string, Round[]>(cells.map((c) => [c.name, []]));
    for (let r = 0; r < rounds; r++) {
      for (const c of cells) {
        const withRedis =
          byName.get(c.name)!.floodgate?.redis === true && redis !== undefined
            ? { pid: redis.child.pid!, port: redis.port }
            : undefined;
        results.get(c.name)!.push(
          runWrk({
            command: wrkCommand(c.port, seconds, connections),
            pid: c.child.pid!,
            ...(withRedis === undefined ? {} : { redis: withRedis }),
          }),
        );
      }
    }
    printCase(results, specs, 'admit', ['undici', 'nginx']);
    printCase(results, specs, 'refuse', ['undici-429', 'nginx-429']);
    printRedis(results);
    const keys = Number(values.keys);
    if (keys > 0 && (only === undefined || only.includes('keys'))) {
      const { bytesPerKey, seconds: took } = await rssPerKey(dir, upstream.port, keys, connections);
      console.log(
        `\nRSS growth with ${keys.toLocaleString('en')} keys held (one per request, a token bucket keyed by query parameter): ${bytesPerKey.toFixed(1)} B per key (loaded in ${took.toFixed(0)} s)`,
      );
    }
  } finally {
    for (const r of running) r.child.kill('SIGTERM');
    redis?.child.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 300));
    await rm(dir, { recursive: true, force: true });
  }
}

function rssKb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? NaN);
}

/** Sends `keys` requests, each with a key of its own, and returns the gateway's RSS growth per key. */
async function rssPerKey(
  dir: string,
  upstreamPort: number,
  keys: number,
  connections: number,
): Promise<{ bytesPerKey: number; seconds: number }> {
  const gw = await startFloodgate('floodgate-keys', dir, keysYaml(upstreamPort));
  try {
    spawnSync(...wrkCommand(gw.port, 2, connections));
    const before = rssKb(gw.child.pid!);
    const script = join(dir, 'keys.lua');
    // One counter per wrk thread (there is one), so every request carries a new key; past `keys`
    // the requests repeat a key already held, and the run is stopped once the gateway holds them all.
    await writeFile(
      script,
      `local n = 0\nlocal limit = ${keys}\nrequest = function()\n  if n < limit then n = n + 1 end\n  return wrk.format("GET", "/bench?k=" .. n)\nend\n`,
    );
    const started = performance.now();
    const load = spawn(
      ...pinned('1', 'wrk', [
        '-t1',
        `-c${Math.min(connections, 16)}`,
        '-d3600s',
        '-s',
        script,
        `http://127.0.0.1:${gw.port}/bench`,
      ]),
      { stdio: 'ignore' },
    );
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
  const line = text
    .split('\n')
    .find(
      (l) =>
        l.startsWith('floodgate_decisions_total{') &&
        l.includes('rule="per-key"') &&
        l.includes('outcome="shadow_admitted"'),
    );
  return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(' ') + 1));
}

await main();
