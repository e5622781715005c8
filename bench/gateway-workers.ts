/**
 * What `floodgate serve --workers 2` buys on this host, against one process, on the memory store
 * (one per-IP token bucket that never refuses: the gateway benchmark's admitted case), in front of
 * the same upstream, alternating the two settings in each round. Nothing is pinned: the gateways,
 * the load generator and the upstream share the machine's cores, as they would on one host, and
 * every second of each phase counts.
 *
 * - The same offered load (autocannon at a fixed --rate, below what one process can serve): gateway
 *   CPU per request, the primary and its workers together, 2 workers ÷ 1 process.
 * - Full speed (wrk, 50 connections): requests/s 2 workers ÷ 1, with the CPU the load generator
 *   and the upstream took per request beside it, since on 2 cores they compete with the workers.
 * - Start: spawn to the first proxied 200, and each process's RSS once serving.
 *
 *   node --conditions=floodgate-source --import tsx bench/gateway-workers.ts [--rounds 5] [--duration 3] [--rate 3000]
 *        [--cell floodgate-none]   (a gateway cell of bench/gateway/cells.ts: floodgate-none has no rules)
 */
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { CELLS, floodgateYaml } from './gateway/cells.js';
import { TICK_US, cpuTicks, median } from './gateway/measure.js';
import { startProcess, type Running } from './gateway/processes.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const PEERS = join(ROOT, 'bench', 'gateway', 'peers.ts');
const MAIN = join(ROOT, 'packages', 'server', 'src', 'cli', 'main.ts');
const AUTOCANNON = join(ROOT, 'node_modules', 'autocannon', 'autocannon.js');
const SOURCE = ['--conditions=floodgate-source', '--import', 'tsx'];

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '5' },
    duration: { type: 'string', default: '3' },
    rate: { type: 'string', default: '3000' },
    cell: { type: 'string', default: 'floodgate' },
  },
});
const [ROUNDS, SECONDS, RATE] = [Number(values.rounds), Number(values.duration), Number(values.rate)];

/** Runs `command` to its end, returning its stdout and the CPU it and the processes in `watch` used. */
async function measured(
  command: string,
  args: string[],
  watch: readonly number[],
): Promise<{ out: string; ticks: number[] }> {
  const before = watch.map(cpuTicks);
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'ignore'] });
  let out = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  await new Promise((resolve) => child.once('exit', resolve));
  return { out, ticks: watch.map((pid, i) => cpuTicks(pid) - before[i]!) };
}

/** The same offered load: autocannon at RATE requests/s; gateway CPU µs per request. */
async function atRate(gateway: Running): Promise<number> {
  const { out, ticks } = await measured(
    process.execPath,
    [
      AUTOCANNON,
      '--json',
      '-c',
      '20',
      '-d',
      String(SECONDS),
      '--overallRate',
      String(RATE),
      `http://127.0.0.1:${gateway.port}/bench`,
    ],
    [gateway.child.pid!],
  );
  const result = JSON.parse(out) as { requests: { total: number }; non2xx: number };
  if (result.non2xx > 0) throw new Error(`${result.non2xx} answers were not 2xx`);
  return (ticks[0]! * TICK_US) / result.requests.total;
}

/** Full speed: wrk with 50 connections; requests/s and the CPU per request of the gateway, wrk and the upstream. */
async function fullSpeed(gateway: Running, upstream: Running) {
  const wrk = spawn('wrk', ['-t1', '-c50', `-d${SECONDS}s`, `http://127.0.0.1:${gateway.port}/bench`], {
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  const before = [cpuTicks(gateway.child.pid!), cpuTicks(upstream.child.pid!)];
  let out = '';
  wrk.stdout.on('data', (c: Buffer) => (out += c.toString()));
  const wrkPid = wrk.pid!;
  let wrkTicks = 0;
  const sample = setInterval(() => (wrkTicks = Math.max(wrkTicks, cpuTicks(wrkPid))), 100);
  await new Promise((resolve) => wrk.once('exit', resolve));
  clearInterval(sample);
  const requests = Number(/(\d+) requests in/.exec(out)?.[1] ?? NaN);
  return {
    rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? NaN),
    gatewayUs: ((cpuTicks(gateway.child.pid!) - before[0]!) * TICK_US) / requests,
    upstreamUs: ((cpuTicks(upstream.child.pid!) - before[1]!) * TICK_US) / requests,
    wrkUs: (wrkTicks * TICK_US) / requests,
  };
}

/** Spawn to the first proxied 200, and the RSS (MB) of each process once serving. */
async function start(file: string, workers: number): Promise<{ seconds: number; rssMb: number[]; running: Running }> {
  const t0 = performance.now();
  const running = await startProcess(`gateway x${workers}`, undefined, process.execPath, [
    ...[...SOURCE, MAIN, 'serve', '--config', file, '--port', '0', '--no-watch', '--workers', String(workers)],
  ]);
  for (;;) {
    const ok = await fetch(`http://127.0.0.1:${running.port}/bench`).then(
      (r) => r.status === 200,
      () => false,
    );
    if (ok) break;
    await new Promise((r) => setTimeout(r, 5));
  }
  const seconds = (performance.now() - t0) / 1000;
  const pids = [running.child.pid!, ...descendants(running.child.pid!)];
  return { seconds, rssMb: pids.map(rssMb), running };
}

function descendants(pid: number): number[] {
  const out = spawnSync('pgrep', ['-P', String(pid)], { encoding: 'utf8' }).stdout.trim();
  const kids = out === '' ? [] : out.split('\n').map(Number);
  return kids.flatMap((k) => [k, ...descendants(k)]);
}

function rssMb(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m === null ? NaN : Number(m[1]) / 1024;
}

const range = (xs: number[], digits: number): string =>
  `${median(xs).toFixed(digits)} (rounds ${Math.min(...xs).toFixed(digits)}-${Math.max(...xs).toFixed(digits)})`;

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'floodgate-bench-workers-'));
  const running: Running[] = [];
  try {
    const upstream = await startProcess('upstream', undefined, process.execPath, [
      ...SOURCE,
      PEERS,
      '--serve',
      'upstream',
    ]);
    running.push(upstream);
    const file = join(dir, 'floodgate.yaml');
    await writeFile(
      file,
      floodgateYaml(
        CELLS.find((c) => c.name === values.cell)!,
        upstream.port,
        undefined,
      ),
    );
    const starts: Record<number, { seconds: number[]; rss: number[][] }> = {
      1: { seconds: [], rss: [] },
      2: { seconds: [], rss: [] },
    };
    const gateways: Record<number, Running> = {};
    for (const w of [1, 2]) {
      const s = await start(file, w);
      starts[w]!.seconds.push(s.seconds);
      starts[w]!.rss.push(s.rssMb);
      gateways[w] = s.running;
      running.push(s.running);
    }
    // Warm both up, untimed.
    for (const w of [1, 2]) await fullSpeed(gateways[w]!, upstream);
    const cpu: Record<number, number[]> = { 1: [], 2: [] };
    const full: Record<number, Array<Awaited<ReturnType<typeof fullSpeed>>>> = { 1: [], 2: [] };
    for (let r = 0; r < ROUNDS; r++) {
      for (const w of r % 2 === 0 ? [1, 2] : [2, 1]) cpu[w]!.push(await atRate(gateways[w]!));
      for (const w of r % 2 === 0 ? [1, 2] : [2, 1]) full[w]!.push(await fullSpeed(gateways[w]!, upstream));
    }
    const load = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
    console.log(
      `${availableParallelism()} CPUs, nothing pinned, ${ROUNDS} rounds of ${SECONDS} s each phase, alternating; load average ${load}`,
    );
    console.log(`same offered load (autocannon, ${RATE} requests/s): gateway CPU µs per request`);
    for (const w of [1, 2]) console.log(`  ${w === 1 ? '1 process ' : '2 workers '} ${range(cpu[w]!, 1)}`);
    const cpuRatio = cpu[2]!.map((x, i) => x / cpu[1]![i]!);
    console.log(`  2 workers ÷ 1 process: ${range(cpuRatio, 2)}x`);
    console.log('full speed (wrk, 50 connections): requests/s; CPU µs per request of the gateway, wrk, the upstream');
    for (const w of [1, 2]) {
      const f = full[w]!;
      console.log(
        `  ${w === 1 ? '1 process ' : '2 workers '} ${range(
          f.map((x) => x.rps),
          0,
        )} req/s; gateway ${range(
          f.map((x) => x.gatewayUs),
          1,
        )}, wrk ${range(
          f.map((x) => x.wrkUs),
          1,
        )}, upstream ${range(
          f.map((x) => x.upstreamUs),
          1,
        )}`,
      );
    }
    const rpsRatio = full[2]!.map((x, i) => x.rps / full[1]![i]!.rps);
    console.log(`  2 workers ÷ 1 process, requests/s: ${range(rpsRatio, 2)}x`);
    for (const w of [1, 2])
      console.log(
        `start, spawn to the first proxied 200: ${w === 1 ? '1 process ' : '2 workers '} ${starts[w]!.seconds[0]!.toFixed(2)} s; RSS MB per process ${starts[w]!.rss[0]!.map((x) => x.toFixed(0)).join(' + ')}`,
      );
  } finally {
    for (const r of running) r.child.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 500));
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
