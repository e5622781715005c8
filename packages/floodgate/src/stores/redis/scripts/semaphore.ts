import { createHash } from 'node:crypto';
import type { LuaScript } from './index.js';

/**
 * SEMAPHORE_LUA is the one script behind {@link RedisSemaphore}: each call runs one operation on
 * one key atomically, named by ARGV[1].
 *
 * State: KEYS[1] is a sorted set of holder ids, each scored by the end of its lease in ms on the
 * server's `TIME` (client clocks never matter). A holder whose lease ended (score <= now) counts
 * for nothing, and every writing operation drops such holders first, so a reclaimed holder can
 * neither renew nor release. The key's TTL ends with its latest lease: a semaphore whose holders
 * all died leaves nothing behind.
 *
 * Time faults: every lease end is on the server's clock. A failover to a server whose clock is
 * behind by s reclaims leases granted before it up to s late; one whose clock is ahead by s, up
 * to s early (the bound a lease costs: set leaseMs above the longest hold plus the largest skew
 * between the servers). A renewal never shortens a lease, whatever the clock.
 *
 * - `acquire permits leaseMs id...`: adds the ids in order while fewer than `permits` hold;
 *   replies `{ granted, held, msUntilFirstLeaseEnds }` (the last is -1 when nobody holds).
 * - `release id...`: removes those ids that still hold; replies how many it removed.
 * - `renew leaseMs id`: extends the id's lease to now + leaseMs (never shortening it) if it still
 *   holds; replies 1, else 0.
 * - `count`: replies how many holders hold now (reads only).
 */
export const SEMAPHORE_LUA = String.raw`
local key, op = KEYS[1], ARGV[1]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

-- int prints a whole number of ms in full (no exponent), as PEXPIRE requires.
local function int(n)
  return string.format('%.0f', n)
end

-- whole parses a whole number of at least 1 (a count or ms); anything else fails the call.
local function whole(s)
  local n = tonumber(s)
  if n == nil or n < 1 or n % 1 ~= 0 then error({ err = 'FLOODGATE bad whole-number argument: ' .. tostring(s) }) end
  return n
end

local function drop_expired()
  redis.call('ZREMRANGEBYSCORE', key, '-inf', int(now))
end

-- The key lives exactly as long as its latest lease.
local function expire_with_last_lease()
  local last = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
  if last[2] then redis.call('PEXPIRE', key, int(math.max(1, tonumber(last[2]) - now))) end
end

local function ms_until_first_lease_ends()
  local first = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
  if first[2] == nil then return -1 end
  return math.max(0, tonumber(first[2]) - now)
end

if op == 'acquire' then
  local permits, lease = whole(ARGV[2]), whole(ARGV[3])
  drop_expired()
  local held, granted = redis.call('ZCARD', key), 0
  for i = 4, #ARGV do
    if held >= permits then break end
    held = held + redis.call('ZADD', key, 'NX', int(now + lease), ARGV[i])
    granted = granted + 1
  end
  if granted > 0 then expire_with_last_lease() end
  return { granted, held, ms_until_first_lease_ends() }
elseif op == 'release' then
  drop_expired()
  return redis.call('ZREM', key, unpack(ARGV, 2))
elseif op == 'renew' then
  local lease = whole(ARGV[2])
  drop_expired()
  local ends = redis.call('ZSCORE', key, ARGV[3])
  if not ends then return 0 end
  -- A renewal never moves a lease end back: a server clock behind the one that granted it (after
  -- a failover) would otherwise shorten the lease and grant its permit twice.
  redis.call('ZADD', key, 'XX', int(math.max(tonumber(ends), now + lease)), ARGV[3])
  expire_with_last_lease()
  return 1
elseif op == 'count' then
  return redis.call('ZCOUNT', key, '(' .. int(now), '+inf')
end
error({ err = 'FLOODGATE unknown semaphore operation: ' .. tostring(op) })
`;

/** SEMAPHORE_SCRIPT is the script behind {@link redis!RedisSemaphore} (`SEMAPHORE_LUA`) with the SHA1 that EVALSHA names it by. */
export const SEMAPHORE_SCRIPT: LuaScript = {
  name: 'semaphore',
  source: SEMAPHORE_LUA,
  sha1: createHash('sha1').update(SEMAPHORE_LUA).digest('hex'),
};

/** AcquireReply is the acquire operation's reply: how many ids it granted, and when the first lease ends. */
export interface AcquireReply {
  readonly granted: number;
  readonly msUntilFirstLeaseEnds: number;
}

/** acquireReplyOf reads the acquire operation's reply, or returns undefined when it is not what the script sends. */
export function acquireReplyOf(reply: unknown): AcquireReply | undefined {
  if (!Array.isArray(reply) || reply.length !== 3) return undefined;
  const [granted, held, msUntil] = reply.map(integerOf);
  if (granted === undefined || held === undefined || msUntil === undefined || granted < 0 || msUntil < -1)
    return undefined;
  return { granted, msUntilFirstLeaseEnds: msUntil };
}

/** integerOf returns a reply's integer (clients may hand back its text), or undefined. */
export function integerOf(value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isSafeInteger(value) ? value : undefined;
  if (typeof value === 'string' && /^-?[0-9]+$/.test(value)) return Number(value);
  return undefined;
}
