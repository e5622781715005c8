/**
 * The Lua twin of `fair-share.ts` and the memory ledger, for the Redis ledger: one script call per
 * batch of reports (every bucket of each; on a cluster, those of one hash slot), per
 * redistribution (every client of this replica in one bucket), or per release (per slot on a
 * cluster). Time is Redis's (`TIME`), so replicas agree on when grants expire.
 *
 * Per bucket (keys in `redis-calls.ts`), a hash (`n` clients, `D` demand summed, `G` grants summed, `d:<client>` and
 * `g:<client>` each client's) and a sorted set of clients by when their grant expires; both expire
 * two TTLs after the last touch, so an abandoned bucket leaves nothing behind.
 */
import { createHash } from 'node:crypto';

const LUA = `
local FLOOR_SHARE = 0.1
local MEANINGFUL_CHANGE = 0.1
local SWEEP_MAX = 64
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

local function drop(h, z, c)
  local d = redis.call('HGET', h, 'd:' .. c)
  if d then
    local g = redis.call('HGET', h, 'g:' .. c) or '0'
    redis.call('HINCRBYFLOAT', h, 'D', 0 - tonumber(d))
    redis.call('HINCRBY', h, 'G', 0 - tonumber(g))
    redis.call('HINCRBY', h, 'n', -1)
    redis.call('HDEL', h, 'd:' .. c, 'g:' .. c)
  end
  redis.call('ZREM', z, c)
end

local function sweep(h, z)
  local expired = redis.call('ZRANGEBYSCORE', z, '-inf', now, 'LIMIT', 0, SWEEP_MAX)
  for _, c in ipairs(expired) do drop(h, z, c) end
end

local function target(d, n, D, limit)
  if n < 1 then n = 1 end
  if D < 0 then D = 0 end
  if D <= limit then return d + (limit - D) / n end
  local floor = limit * FLOOR_SHARE / n
  return (d + floor) * limit / (D + limit * FLOOR_SHARE)
end

local function totals(h)
  local v = redis.call('HMGET', h, 'n', 'D', 'G')
  return tonumber(v[1] or '0'), tonumber(v[2] or '0'), tonumber(v[3] or '0')
end

local function meaningful(old, new)
  if new == old then return false end
  if old == 0 or new == 0 then return true end
  return math.abs(new - old) >= old * MEANINGFUL_CHANGE
end

local function grantOf(d, gOld, n, D, G, limit)
  local free = limit - (G - gOld)
  local g = math.floor(target(d, n, D, limit) + 1e-9)
  if g > free then g = free end
  if g < 0 then g = 0 end
  return g
end

-- grantOne returns the client's grant, or -1 when demand is nil and the bucket does not know it.
local function grantOne(h, z, c, limit, demand, ttlMs)
  local dOld = redis.call('HGET', h, 'd:' .. c)
  local gOld = 0
  if not dOld then
    if demand == nil then return -1 end
    redis.call('HINCRBY', h, 'n', 1)
    dOld = 0
  else
    dOld = tonumber(dOld)
    gOld = tonumber(redis.call('HGET', h, 'g:' .. c) or '0')
  end
  local d = dOld
  if demand ~= nil then
    redis.call('HINCRBYFLOAT', h, 'D', demand - dOld)
    redis.call('HSET', h, 'd:' .. c, tostring(demand))
    d = demand
  end
  local n, D, G = totals(h)
  local g = grantOf(d, gOld, n, D, G, limit)
  redis.call('HINCRBY', h, 'G', g - gOld)
  redis.call('HSET', h, 'g:' .. c, g)
  redis.call('ZADD', z, now + ttlMs, c)
  redis.call('PEXPIRE', h, ttlMs * 2)
  redis.call('PEXPIRE', z, ttlMs * 2)
  return g
end

-- regrantOne returns the grant of client c (demand d, grant gOld), changed only when the change is meaningful.
local function regrantOne(h, z, c, d, gOld, limit, ttlMs)
  local n, D, G = totals(h)
  if not meaningful(gOld, grantOf(d, gOld, n, D, G, limit)) then return gOld end
  return grantOne(h, z, c, limit, nil, ttlMs)
end

local op = ARGV[1]
local out = {}
if op == 'grant' then
  -- KEYS: hash, set per bucket. ARGV: 'grant', then one report per argument: its client, then per
  -- bucket its index in KEYS (1 for the first pair), limit, demand ('-' for none) and ttlMs, all
  -- space-separated. Each bucket is swept once; the reports are granted in order.
  for i = 1, #KEYS / 2 do sweep(KEYS[2 * i - 1], KEYS[2 * i]) end
  for r = 2, #ARGV do
    local next = string.gmatch(ARGV[r], '%S+')
    local c = next()
    for k in next do
      local limit, demand, ttlMs = tonumber(next()), next(), tonumber(next())
      k = tonumber(k)
      out[#out + 1] = grantOne(KEYS[2 * k - 1], KEYS[2 * k], c, limit, tonumber(demand), ttlMs)
    end
  end
elseif op == 'regrant' then
  -- ARGV: 'regrant', limit, ttlMs, clients...; KEYS: one bucket's hash and set.
  local h, z = KEYS[1], KEYS[2]
  local limit, ttlMs = tonumber(ARGV[2]), tonumber(ARGV[3])
  sweep(h, z)
  local n, D = totals(h)
  local order = {}
  for i = 4, #ARGV do
    local c = ARGV[i]
    local held = redis.call('HMGET', h, 'd:' .. c, 'g:' .. c)
    out[i - 3] = -1
    if held[1] then
      local d, g = tonumber(held[1]), tonumber(held[2] or '0')
      order[#order + 1] = { i - 3, c, target(d, n, D, limit) - g, d, g }
    end
  end
  table.sort(order, function(a, b) return a[3] < b[3] end)
  for _, o in ipairs(order) do out[o[1]] = regrantOne(h, z, o[2], o[4], o[5], limit, ttlMs) end
else
  -- ARGV: 'release', client; KEYS: hash, set per bucket.
  for i = 1, #KEYS / 2 do
    local h, z = KEYS[2 * i - 1], KEYS[2 * i]
    drop(h, z, ARGV[2])
    sweep(h, z)
    if tonumber(redis.call('HGET', h, 'n') or '0') <= 0 then redis.call('DEL', h, z) end
  end
end
return out
`;

/** QUOTA_SCRIPT is the ledger's script: its source and the SHA1 that EVALSHA names it by. */
export const QUOTA_SCRIPT = Object.freeze({
  name: 'rlqs-ledger',
  source: LUA,
  sha1: createHash('sha1').update(LUA).digest('hex'),
});
