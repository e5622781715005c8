/**
 * The dashboard's cost in a running gateway: `node --conditions=floodgate-source --import tsx bench/dashboard-http.ts [--duration 3] [--rounds 5] [--connections 50]`
 *
 * Two `floodgate serve` processes with the same routes and rules (two rules, per client and per
 * route, that admit everything) and an admin token: one with `admin.dashboard.enabled: false`,
 * one with the dashboard on; the latter is also measured with one browser-like viewer holding the
 * event stream open. wrk loads each in short alternating rounds. Reported: requests/s and, steady
 * on a busy machine, the gateway's CPU time per request (from /proc), with ratios to the
 * dashboard off. Nothing is asserted.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { request } from 'undici';
import { cpuTicks } from './gateway/measure.js';
import { startProcess, type Running } from './gateway/processes.js';
import { ratio, table } from './support/format.js';

const MAIN = join(fileURLToPath(import.meta.url), '..', '..', 'packages', 'server', 'src', 'cli', 'main.ts');
const TOKEN = 'bench-dashboard-token-0123456789';
const { values: flags } = parseArgs({
  options: {
    duration: { type: 'string', default: '3' },
    rounds: { type: 'string', default: '5' },
    connections: { type: 'string', default: '50' },
  },
});
const TICK_US = 1_000_000 / Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim() || 100);

function yaml(upstreamPort: number, dashboard: boolean): string {
  return `
admin: { tokenEnv: FG_BENCH_TOKEN, dashboard: { enabled: ${dashboard} } }
routes:
  - name: bench
    upstream: http://127.0.0.1:${upstreamPort}
    rules:
      - name: per-client
        policy: { algorithm: tokenBucket, capacity: 1e12, refillPerSecond: 1e12 }
      - name: per-route
        policy: { algorithm: gcra, rate: 1e9, periodMs: 1000, maxBurst: 1000000 }
        key: { type: route }
`;
}

function startGateway(file: string): Promise<Running> {
  const args = ['--conditions=floodgate-source', '--import', 'tsx', MAIN, 'serve', '--config', file];
  args.push('--port', '0', '--admin-port', '0', '--no-watch');
  return startProcess('gateway', undefined, process.execPath, args, { ...process.env, FG_BENCH_TOKEN: TOKEN });
}

/** Runs wrk against `port` (asynchronously: the upstream lives in this process) and reads the gateway's CPU time over the run. */
async function wrk(port: number, pid: number): Promise<{ rps: number; cpuUsPerRequest: number }> {
  const before = cpuTicks(pid);
  const child = spawn(
    'wrk',
    ['-t1', `-c${flags.connections}`, `-d${flags.duration}s`, `http://127.0.0.1:${port}/bench`],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  let out = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  const ticks = cpuTicks(pid) - before;
  if (code !== 0 || !/requests in/.test(out)) throw new Error(`wrk failed (${String(code)}): ${out}`);
  const requests = Number(/(\d+) requests in/.exec(out)![1]);
  return {
    rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? NaN),
    cpuUsPerRequest: (ticks * TICK_US) / requests,
  };
}

const median = (xs: readonly number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'floodgate-bench-dashboard-'));
  const upstream = createServer((_req, res) =>
    res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '2' }).end('ok'),
  );
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  const upstreamPort = (upstream.address() as AddressInfo).port;
  await writeFile(join(dir, 'off.yaml'), yaml(upstreamPort, false));
  await writeFile(join(dir, 'on.yaml'), yaml(upstreamPort, true));
  const [off, on] = await Promise.all([startGateway(join(dir, 'off.yaml')), startGateway(join(dir, 'on.yaml'))]);
  const results = new Map<string, { rps: number[]; cpu: number[] }>([
    ['dashboard off', { rps: [], cpu: [] }],
    ['dashboard on', { rps: [], cpu: [] }],
    ['dashboard on, one viewer', { rps: [], cpu: [] }],
  ]);
  try {
    // One unrecorded round first: each gateway's JIT warms up before anything counts.
    for (const gw of [off, on]) await wrk(gw.port, gw.child.pid!);
    for (let round = 0; round < Number(flags.rounds); round++) {
      for (const [name, gw] of [
        ['dashboard off', off],
        ['dashboard on', on],
        ['dashboard on, one viewer', on],
      ] as const) {
        const viewer = name.endsWith('viewer')
          ? await request(`http://127.0.0.1:${gw.adminPort}/dashboard/events`, {
              headers: { authorization: `Bearer ${TOKEN}` },
            })
          : undefined;
        viewer?.body.on('data', () => {});
        const r = await wrk(gw.port, gw.child.pid!);
        viewer?.body.destroy();
        results.get(name)!.rps.push(r.rps);
        results.get(name)!.cpu.push(r.cpuUsPerRequest);
      }
    }
  } finally {
    off.child.kill('SIGTERM');
    on.child.kill('SIGTERM');
    upstream.close();
    await rm(dir, { recursive: true, force: true });
  }
  const base = results.get('dashboard off')!;
  const rows = [...results].map(([name, r]) => [
    name,
    median(r.rps).toFixed(0),
    ratio(median(r.rps) / median(base.rps)),
    median(r.cpu).toFixed(1),
    ratio(median(r.cpu) / median(base.cpu)),
  ]);
  console.log(
    `floodgate serve, two admit-all rules, ${flags.connections} connections, ${flags.rounds} rounds of ${flags.duration} s (medians)\n`,
  );
  console.log(table(['gateway', 'requests/s', 'vs off', 'CPU µs/request', 'vs off'], rows, new Set([1, 2, 3, 4])));
}

await main();
