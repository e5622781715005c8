import { createHash } from 'node:crypto';
import type { RedisAdapter } from './adapter.js';
import { hashSlotOf } from './key-layout.js';
import type { LuaScript } from './scripts/index.js';
import type { ScriptRunner } from './runner.js';

/**
 * RedisEvictionRisk says what a Redis's memory settings mean for floodgate's keys:
 *
 * - `'unbounded'`: `maxmemory` is 0, nothing is ever evicted (the machine's memory is the bound).
 * - `'refuses-writes'`: `noeviction` with a bound: when full, Redis refuses writes with OOM. A key
 *   already refused stays refused (a refusal writes nothing, so its script still runs); a new key
 *   or an admission fails with `STORE_ERROR` and `onError` decides. No limit is ever reset.
 * - `'evicts-limit-state'`: an `allkeys-*` or `volatile-*` policy with a bound: when full, Redis
 *   may delete any floodgate key (each carries a TTL until it is back to full, so the volatile
 *   policies reach them too; `volatile-ttl` takes the shortest TTL first, often floodgate's), and a
 *   throttled key that is evicted comes back full: its limit is reset without anyone being told.
 * - `'unknown'`: the settings could not be read (INFO refused, Redis down): see `message`.
 */
export type RedisEvictionRisk = 'unbounded' | 'refuses-writes' | 'evicts-limit-state' | 'unknown';

/** RedisMemoryReport is what {@link redis!RedisStore.checkMemory} found on one Redis (one master of a cluster). */
export interface RedisMemoryReport {
  /** The master (`host:port`) on a cluster, as the adapter names it; undefined for a single Redis. */
  readonly node: string | undefined;
  /** `maxmemory` in bytes (0: no bound); undefined when it could not be read. */
  readonly maxmemoryBytes: number | undefined;
  /** `maxmemory-policy` (e.g. `noeviction`, `allkeys-lru`); undefined when it could not be read. */
  readonly policy: string | undefined;
  /** Keys this server has evicted since it started (INFO's `evicted_keys`), any key, not only floodgate's. */
  readonly evictedKeys: number | undefined;
  /** What the settings mean for a throttled key (see {@link RedisEvictionRisk}). */
  readonly risk: RedisEvictionRisk;
  /** One sentence for a log: what was found and, when it is not safe, what to change. */
  readonly message: string;
}

/**
 * MEMORY_CHECK_SCRIPT returns INFO's memory and stats sections. It is a script (not CONFIG GET)
 * because the store's adapter only runs scripts, and because managed Redis services that rename or
 * refuse CONFIG usually still answer INFO; it reads nothing and writes nothing. Its one key only
 * routes it to a cluster node.
 */
export const MEMORY_CHECK_SCRIPT: LuaScript = (() => {
  const source = "return { redis.call('INFO', 'memory'), redis.call('INFO', 'stats') }";
  return { name: 'memory-check', source, sha1: createHash('sha1').update(source).digest('hex') };
})();

/** fieldOf returns the value of `name:` in an INFO text, or undefined. */
function fieldOf(info: string, name: string): string | undefined {
  const match = new RegExp(`^${name}:([^\\r\\n]*)`, 'm').exec(info);
  return match?.[1]?.trim();
}

function wholeOf(text: string | undefined): number | undefined {
  return text !== undefined && /^[0-9]+$/.test(text) ? Number(text) : undefined;
}

/** assessMemory returns the report for a server whose `maxmemory` and policy are as given. */
export function assessMemory(
  node: string | undefined,
  settings: { maxmemoryBytes: number; policy: string; evictedKeys: number | undefined },
): RedisMemoryReport {
  const { maxmemoryBytes, policy } = settings;
  const where = node === undefined ? 'Redis' : `Redis ${node}`;
  const base = { node, maxmemoryBytes, policy, evictedKeys: settings.evictedKeys };
  if (maxmemoryBytes === 0) {
    return {
      ...base,
      risk: 'unbounded',
      message: `${where} has no maxmemory: nothing is evicted (size the machine for every key in flight)`,
    };
  }
  if (policy === 'noeviction') {
    return {
      ...base,
      risk: 'refuses-writes',
      message: `${where} has maxmemory ${maxmemoryBytes} bytes under noeviction: when full, refused keys stay refused and new keys or admissions fail with OOM, decided by RedisStore.onError ('fail-closed' holds every limit)`,
    };
  }
  const evicted =
    settings.evictedKeys === undefined || settings.evictedKeys === 0
      ? ''
      : ` (it has evicted ${settings.evictedKeys} keys since it started)`;
  return {
    ...base,
    risk: 'evicts-limit-state',
    message: `${where} has maxmemory ${maxmemoryBytes} bytes under ${policy}${evicted}: when full it may evict a throttled key, whose limit then starts over from full; give floodgate a Redis (or a database on a dedicated instance) with maxmemory-policy noeviction, or enough memory that it never fills`,
  };
}

/** unknownReport returns the report for a server whose settings could not be read, saying why. */
function unknownReport(node: string | undefined, why: string): RedisMemoryReport {
  const where = node === undefined ? 'Redis' : `Redis ${node}`;
  return {
    node,
    maxmemoryBytes: undefined,
    policy: undefined,
    evictedKeys: undefined,
    risk: 'unknown',
    message: `${where}: could not read maxmemory and maxmemory-policy (${why}); check them by hand: only noeviction, or no maxmemory, keeps throttled keys from being reset`,
  };
}

/** reportOf reads the memory check script's reply into a report, or an `unknown` one saying what was wrong. */
export function reportOf(node: string | undefined, reply: unknown): RedisMemoryReport {
  const texts = Array.isArray(reply)
    ? reply.map((part) =>
        typeof part === 'string' ? part : part instanceof Uint8Array ? Buffer.from(part).toString('latin1') : '',
      )
    : [];
  const memory = texts[0] ?? '';
  const maxmemoryBytes = wholeOf(fieldOf(memory, 'maxmemory'));
  const policy = fieldOf(memory, 'maxmemory_policy');
  if (maxmemoryBytes === undefined || policy === undefined || policy === '')
    return unknownReport(node, 'INFO memory has no maxmemory or maxmemory_policy field');
  return assessMemory(node, { maxmemoryBytes, policy, evictedKeys: wholeOf(fieldOf(texts[1] ?? '', 'evicted_keys')) });
}

/**
 * routingKeys returns, for each master the adapter knows on a cluster, a key (under `prefix`) whose
 * slot it serves; on a single Redis, or a cluster whose map is not known yet, one key for any node.
 */
export function routingKeys(adapter: RedisAdapter, prefix: string): Map<string | undefined, string> {
  const nodeOf = adapter.cluster ? adapter.nodeOf : undefined;
  const keyOf = (tag: number): string => `${prefix}memory-check:{${tag}}`;
  if (nodeOf === undefined) return new Map([[undefined, keyOf(0)]]);
  const masters = new Set<string>();
  for (let slot = 0; slot < 16_384; slot++) {
    const node = nodeOf(slot);
    if (node !== undefined) masters.add(node);
  }
  if (masters.size === 0) return new Map([[undefined, keyOf(0)]]);
  const keys = new Map<string | undefined, string>();
  for (let tag = 0; keys.size < masters.size && tag < 1_000_000; tag++) {
    const node = nodeOf(hashSlotOf(keyOf(tag)));
    if (node !== undefined && !keys.has(node)) keys.set(node, keyOf(tag));
  }
  return keys;
}

/**
 * checkRedisMemory returns a report per master (one on a single Redis) of `maxmemory`,
 * `maxmemory-policy` and what they mean for throttled keys. It never rejects: a server it cannot
 * read (INFO refused by an ACL, Redis down, a timeout) gets an `unknown` report naming the error.
 */
export async function checkRedisMemory(
  runner: ScriptRunner,
  routes: Map<string | undefined, string>,
): Promise<RedisMemoryReport[]> {
  const checks = [...routes].map(async ([node, key]) => {
    try {
      return reportOf(node, await runner.run(MEMORY_CHECK_SCRIPT, [key], [], 'checkMemory'));
    } catch (error) {
      return unknownReport(node, error instanceof Error ? error.message : String(error));
    }
  });
  return Promise.all(checks);
}
