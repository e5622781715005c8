/**
 * What Redis spends on floodgate's decision script: one token-bucket rule on 100 keys, then on one
 * hot key, decided 40,000 times through a RedisStore whose batches hold 1, 16 or 128 decisions, on
 * a redis-server this script starts. A key named several times in a batch is read and written
 * once, so the hot key shows the script's own work per decision, and the 100 keys that plus a
 * `GET` and a `SET` each. The bucket (10^9 tokens, 1,000 a second) never refuses and never comes to
 * rest within the run, so every decision reads and writes a state. For each case it prints Redis's
 * own CPU per decision (`INFO cpu`, user + system: the protocol and the script), the time inside
 * the scripts per decision and per script (`INFO commandstats`), and the scripts run. The
 * per-decision cost at large batches is the script's work for one decision; what a batch of 1
 * adds is the per-call cost. Nothing is asserted.
 *
 *   node --conditions=floodgate-source --import tsx bench/redis-script-cost.ts
 */
import { Redis } from 'ioredis';
import { Limiter, tokenBucket } from 'floodgate';
import { RedisStore, ioredisAdapter } from 'floodgate/redis';
import { startRedisServer } from '../packages/floodgate/test/support/redis-server.js';

const DECISIONS = 40_000;

const servers = await startRedisServer();
const client = new Redis({ port: servers.ports[0]!, host: '127.0.0.1' });

/** Redis's CPU time so far, user + system, in ms. */
async function cpuMs(): Promise<number> {
  const info = await client.info('cpu');
  const read = (name: string): number => Number(new RegExp(`${name}:([\\d.]+)`).exec(info)![1]);
  return (read('used_cpu_user') + read('used_cpu_sys')) * 1000;
}

/** The EVALSHA calls Redis has run, and the µs spent inside them. */
async function scripts(): Promise<{ calls: number; usec: number }> {
  const info = await client.info('commandstats');
  const m = /cmdstat_evalsha:calls=(\d+),usec=(\d+)/.exec(info);
  return { calls: Number(m?.[1] ?? 0), usec: Number(m?.[2] ?? 0) };
}

try {
  for (const [keys, batch] of [100, 1].flatMap((k) => [1, 16, 128].map((b) => [k, b] as const))) {
    const store = new RedisStore({
      adapter: ioredisAdapter(client),
      timeoutMs: 5000,
      maxBatchSize: batch,
      prefix: `b${batch}k${keys}:`,
    });
    const limiter = new Limiter({ policy: tokenBucket({ capacity: 1e9, refillPerSecond: 1000 }), store });
    for (let i = 0; i < 2000; i++) await limiter.consume(`k${i % keys}`); // every key made, the script cached
    const [cpu0, s0] = [await cpuMs(), await scripts()];
    for (let i = 0; i < DECISIONS; i += batch)
      await Promise.all(Array.from({ length: batch }, (_, j) => limiter.consume(`k${(i + j) % keys}`)));
    const [cpu1, s1] = [await cpuMs(), await scripts()];
    const calls = s1.calls - s0.calls;
    console.log(
      `${String(keys).padStart(3)} keys, batches of ${String(batch).padStart(3)}: Redis CPU ${(((cpu1 - cpu0) * 1000) / DECISIONS).toFixed(1)} µs a decision; inside the scripts ${((s1.usec - s0.usec) / DECISIONS).toFixed(1)} µs a decision, ${((s1.usec - s0.usec) / calls).toFixed(1)} µs a script; ${calls} scripts`,
    );
  }
} finally {
  client.disconnect();
  await servers.stop();
}
