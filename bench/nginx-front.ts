/**
 * nginx in front of floodgate against nginx's own `limit_req`: `node --conditions=floodgate-source --import tsx bench/nginx-front.ts [--duration 3] [--rounds 5] [--connections 32]`
 *
 * Two subjects in front of the same upstream (a node:http server in this process answering `ok`):
 * - `nginx + floodgate`: examples/nginx/nginx.conf (one worker, ports changed) asking a
 *   `floodgate ratelimit` process on the memory store about each request (auth_request to
 *   `/v1/auth`, the example's two descriptors, one of them limited);
 * - `nginx limit_req`: the gateway benchmark's nginx (one worker, `limit_req` per address).
 * Both admit every request (limits far above the load). wrk loads each in alternating rounds, after
 * one unrecorded round each. Reported (medians): requests/s, and CPU time per request of every
 * process of a subject (nginx's master and worker; floodgate's process too), from /proc, which is
 * the steadier figure on a shared machine; with the load average. Nothing is asserted.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { cpuTicks } from './gateway/measure.js';
import { NGINX, writeNginxConf } from './gateway/nginx.js';
import { ratio, table } from './support/format.js';
import { exampleConf, startNginx, type RunningNginx } from '../packages/server/test/support/nginx.js';
import { closedPort } from '../packages/server/test/support/ports.js';
import { startServiceProcess, type ServiceProcess } from '../packages/server/test/ratelimit/processes.js';

const { values: flags } = parseArgs({
  options: {
    duration: { type: 'string', default: '3' },
    rounds: { type: 'string', default: '5' },
    connections: { type: 'string', default: '32' },
  },
});

/** The example's descriptors with limits no run reaches, so that every request is admitted. */
const DESCRIPTORS = `domain: nginx
descriptors:
  - key: api_key
    rate_limit: { unit: second, requests_per_unit: 1000000000, algorithm: token-bucket, name: per-key }
  - key: remote_address
    rate_limit: { unit: second, requests_per_unit: 1000000000, algorithm: token-bucket, name: per-address }
  - key: path
    value: /api/login
    descriptors:
      - key: remote_address
        rate_limit: { unit: hour, requests_per_unit: 10, algorithm: sliding-window, name: login }
`;

const TICK_US = 1_000_000 / Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim() || 100);

/** Subject is one thing wrk loads: its port, nginx's master pid, and floodgate's when it has one. */
interface Subject {
  readonly name: string;
  readonly port: number;
  readonly nginxPid: number;
  readonly floodgatePid: number | undefined;
}

interface Round {
  readonly rps: number;
  /** CPU µs per request of nginx (master and worker) and of floodgate's process. */
  readonly nginxUs: number;
  readonly floodgateUs: number;
  readonly non2xx: number;
}

async function wrk(subject: Subject): Promise<Round> {
  const ticks = (): [number, number] => [
    cpuTicks(subject.nginxPid),
    subject.floodgatePid === undefined ? 0 : cpuTicks(subject.floodgatePid),
  ];
  const before = ticks();
  const child = spawn(
    'wrk',
    ['-t1', `-c${flags.connections}`, `-d${flags.duration}s`, `http://127.0.0.1:${subject.port}/api/items`],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  let out = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  const [nginxTicks, floodgateTicks] = ticks();
  if (code !== 0 || !/requests in/.test(out)) throw new Error(`wrk failed (${String(code)}): ${out}`);
  const requests = Number(/(\d+) requests in/.exec(out)![1]);
  return {
    rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? NaN),
    nginxUs: ((nginxTicks - before[0]) * TICK_US) / requests,
    floodgateUs: ((floodgateTicks - before[1]) * TICK_US) / requests,
    non2xx: Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0),
  };
}

const median = (xs: readonly number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'floodgate-bench-nginx-front-'));
  const upstream = createServer((_req, res) =>
    res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '2' }).end('ok'),
  );
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  const app = (upstream.address() as AddressInfo).port;
  await writeFile(join(dir, 'ratelimit.yaml'), DESCRIPTORS);
  let floodgate: ServiceProcess | undefined;
  const nginxes: RunningNginx[] = [];
  try {
    floodgate = await startServiceProcess(['--config', join(dir, 'ratelimit.yaml')]);
    const frontPort = await closedPort();
    const front = await startNginx(
      exampleConf({ nginx: frontPort, floodgate: floodgate.httpPort, app }, { workerProcesses: 1 }),
      frontPort,
    );
    nginxes.push(front);
    const alonePort = await closedPort();
    await writeNginxConf(join(dir, 'limit-req'), {
      port: alonePort,
      upstreamPort: app,
      limit: { rate: '100000000r/s', burst: 1_000_000, policy: '"per-client";q=100000000;w=1', retryAfterSeconds: 1 },
    });
    const alone = await startNginx(await readFile(join(dir, 'limit-req', 'nginx.conf'), 'utf8'), alonePort);
    nginxes.push(alone);
    const subjects: Subject[] = [
      { name: 'nginx + floodgate (auth_request)', port: frontPort, nginxPid: front.pid, floodgatePid: floodgate.pid },
      { name: 'nginx limit_req', port: alonePort, nginxPid: alone.pid, floodgatePid: undefined },
    ];
    const results = new Map(subjects.map((s) => [s.name, [] as Round[]]));
    for (const s of subjects) await wrk(s);
    const loads: number[] = [loadavg()[0]!];
    for (let round = 0; round < Number(flags.rounds); round++)
      for (const s of subjects) {
        results.get(s.name)!.push(await wrk(s));
      }
    loads.push(loadavg()[0]!);
    const cpu = (r: Round): number => r.nginxUs + r.floodgateUs;
    const base = results.get('nginx limit_req')!;
    const rows = [...results].map(([name, rounds]) => [
      name,
      median(rounds.map((r) => r.rps)).toFixed(0),
      ratio(median(rounds.map((r) => r.rps)) / median(base.map((r) => r.rps))),
      median(rounds.map(cpu)).toFixed(1),
      median(rounds.map((r) => r.nginxUs)).toFixed(1),
      median(rounds.map((r) => r.floodgateUs)).toFixed(1),
      ratio(median(rounds.map(cpu)) / median(base.map(cpu))),
      String(rounds.reduce((sum, r) => sum + r.non2xx, 0)),
    ]);
    console.log(
      `${NGINX}, 1 worker each; ${flags.connections} connections, ${flags.rounds} rounds of ${flags.duration} s (medians); ` +
        `load average ${loads.map((l) => l.toFixed(1)).join(' -> ')}\n`,
    );
    console.log(
      table(
        ['subject', 'requests/s', 'vs limit_req', 'CPU µs/request', 'nginx', 'floodgate', 'vs limit_req', 'non-2xx'],
        rows,
        new Set([1, 2, 3, 4, 5, 6, 7]),
      ),
    );
  } finally {
    for (const n of nginxes) await n.stop();
    await floodgate?.stop();
    upstream.close();
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
