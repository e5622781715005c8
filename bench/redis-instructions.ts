/**
 * Redis's own instructions per request on floodgate's batch script, counted by valgrind's
 * callgrind on a redis-server this script starts: the figure a busy machine does not move, beside
 * bench/redis-script-cost.ts's CPU time, which it does. Requests come in the gateway benchmark's
 * shapes on hot keys (one client, one route, one host): 1 rule (a token bucket per IP) or 3 rules
 * (that bucket, a sliding window per route and a fixed window per Host, decided all or nothing),
 * 12 requests at a time, so each tick's decisions go to Redis as one batch script. After a
 * warm-up, counting is turned on for 12,000 requests; the count covers everything redis-server
 * does for them (the protocol, the script, its GETs and SETs). Nothing is asserted.
 *
 *   node --conditions=floodgate-source --import tsx bench/redis-instructions.ts [--rules 1,3] [--requests 12000] [--batch 12]
 */
import { execFile, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs, promisify } from 'node:util';
import { Redis } from 'ioredis';
import { Limiter, decideAll, fixedWindow, slidingWindowCounter, tokenBucket } from 'floodgate';
import { RedisStore, ioredisAdapter } from 'floodgate/redis';
import { control, dumpedInstructions } from './callgrind.js';
import { freePort } from './gateway/processes.js';

const run = promisify(execFile);
const { values } = parseArgs({
  options: {
    rules: { type: 'string', default: '1,3' },
    requests: { type: 'string', default: '12000' },
    batch: { type: 'string', default: '12' },
  },
});
const rulesToCount = values.rules.split(',').map(Number);
if (!rulesToCount.every((n) => n === 1 || n === 3)) throw new Error(`--rules: 1, 3 or both, not ${values.rules}`);
const requests = Number(values.requests);
const batch = Number(values.batch);

/** Starts redis-server under callgrind, counting off, and resolves once it answers a PING. */
async function startCounted(dir: string): Promise<{ pid: number; port: number; stop: () => void }> {
  const port = await freePort();
  const args = ['--tool=callgrind', '--instr-atstart=no', `--callgrind-out-file=${join(dir, 'cg.%p')}`];
  const child = spawn(
    'valgrind',
    [...args, 'redis-server', '--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    { stdio: 'ignore' },
  );
  for (let tries = 0; ; tries++) {
    try {
      if ((await run('redis-cli', ['-p', String(port), 'ping'])).stdout.includes('PONG')) break;
    } catch (err) {
      if (tries > 200) throw err;
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  return { pid: child.pid!, port, stop: () => child.kill('SIGKILL') };
}

/** Redis's instructions per request of `rules` rules, over one counted run of `requests`. */
async function count(rules: number): Promise<number> {
  const dir = await mkdtemp(join(tmpdir(), 'floodgate-redis-cg-'));
  const server = await startCounted(dir);
  const client = new Redis({ port: server.port, host: '127.0.0.1' });
  try {
    const store = new RedisStore({ adapter: ioredisAdapter(client), timeoutMs: 60_000, maxBatchSize: 1000 });
    const perIp = new Limiter({ policy: tokenBucket({ capacity: 1e9, refillPerSecond: 1000 }), store });
    const perRoute = new Limiter({ policy: slidingWindowCounter({ limit: 1e8, windowMs: 60_000 }), store });
    const perHost = new Limiter({ policy: fixedWindow({ limit: 1e8, windowMs: 60_000 }), store });
    const one = (): Promise<unknown> =>
      rules === 1
        ? perIp.consume('127.0.0.1')
        : Promise.resolve(
            decideAll([
              { limiter: perIp, key: '127.0.0.1' },
              { limiter: perRoute, key: 'all' },
              { limiter: perHost, key: '127.0.0.1:8080' },
            ]),
          );
    const send = async (n: number): Promise<void> => {
      for (let i = 0; i < n; i += batch) await Promise.all(Array.from({ length: batch }, one));
    };
    await send(2000);
    await control(server.pid, '--instr=on');
    await send(requests);
    await control(server.pid, '--dump');
    return (await dumpedInstructions(dir, server.pid, 1, `${rules} rules`)) / requests;
  } finally {
    client.disconnect();
    server.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

for (const rules of rulesToCount) {
  const perRequest = await count(rules);
  console.log(
    `${rules} rule${rules === 1 ? '' : 's'}: ${Math.round(perRequest)} Redis instructions a request (${batch} requests a batch, ${requests} counted)`,
  );
}
