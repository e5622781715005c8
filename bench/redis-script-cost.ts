/**
 * What Redis spends on floodgate's decision script: one token-bucket rule on 100 keys, decided
 * 40,000 times through a RedisStore whose batches hold 1, 16 or 128 decisions, on a redis-server
 * this script starts. For each batch size it prints Redis's own CPU per decision (`INFO cpu`, user
 * + system: the protocol and the script), the time inside the scripts per decision and per script
 * (`INFO commandstats`), and the scripts run. The per-decision cost at large batches is the
 * script's work for one decision; what a batch of 1 adds is the per-call cost. Nothing is asserted.
 *
 *   node --conditions=floodgate-source --import tsx bench/redis-script-cost.ts
 */
import { Redis } from 'ioredis';
import { Limiter, tokenBucket } from 'floodgate';
import { RedisStore, ioredisAdapter } from 'floodgate/redis';
import { startRedisServer } from '../packages/floodgate/test/support/redis-server.js';

const DECISIONS = 40_000;
const KEYS = 100;

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
  for (const batch of [1, 16, 128]) {
    const store = new RedisStore({
      adapter: ioredisAdapter(client),
      timeoutMs: 5000,
      maxBatchSize: batch,
      prefix: `b${batch}:`,
    });
    const limiter = new Limiter({ policy: tokenBucket({ capacity: 1e9, refillPerSecond: 1e9 }), store });
    for (let i = 0; i < 2000; i++) await limiter.consume(`k${i % KEYS}`); // every key made, the script cached
    const [cpu0, s0] = [await cpuMs(), await scripts()];
    for (let i = 0; i < DECISIONS; i += batch)
      await Promise.all(Array.from({ length: batch }, (_, j) => limiter.consume(`k${(i + j) % KEYS}`)));
    const [cpu1, s1] = [await cpuMs(), await scripts()];
    const calls = s1.calls - s0.calls;
    console.log(
      `batches of ${String(batch).padStart(3)}: Redis CPU ${(((cpu1 - cpu0) * 1000) / DECISIONS).toFixed(1)} µs a decision; inside the scripts ${((s1.usec - s0.usec) / DECISIONS).toFixed(1)} µs a decision, ${((s1.usec - s0.usec) / calls).toFixed(1)} µs a script; ${calls} scripts`,
    );
  }
} finally {
  client.disconnect();
  await servers.stop();
}
