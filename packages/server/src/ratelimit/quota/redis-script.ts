/**
 * The Lua twin of `fair-share.ts` and the memory ledger, for the Redis ledger: one script call per
 * batch of reports (every bucket of each; on a cluster, those of one hash slot), per
 * redistribution (every client of this replica in one bucket), per release and per settle (per
 * slot on a cluster). Time is Redis's (`TIME`), so replicas agree on when grants expire.
 *
 * Per bucket (keys in `redis-calls.ts`), a hash (`n` clients, `D` demand summed, `G` grants summed,
 * `P` lowered grants still held, `Z` clients granted nothing, `d:<client>` and `g:<client>` each
 * client's, `p:~<token>` what a call lowered) and a sorted set of when each client's grant expires
 * and when each call's hold (`~<token>`) ends; both expire two TTLs after the last touch, so an
 * abandoned bucket leaves nothing behind.
 *
 * Every call names a sentinel first (KEYS[1], one per slot on a cluster): a hash with the ledger's
 * epoch (`id`, created `at`, and `until` when grants are held back). A caller passes the epoch it
 * last saw; a sentinel gone (FLUSHALL, a restart without persistence) or another epoch than the
 * caller's means the records of grants still held by clients were lost, and until one assignment
 * TTL after the new epoch began no client's grant grows beyond what its replica says it holds.
 *
 * ARGV: op (`grant`, `regrant`, `release`, `settle`), the epoch the caller knows ('' for none), how
 * long a loss holds grants back (ms), this call's token, the channel to publish changes on ('' for
 * none), then the op's arguments. The reply: the epoch, 1 when the call lowered a grant (the caller
 * then settles its token once it has sent the grants), then the grants.
 */
import { createHash } from 'node:crypto';

const LUA = `
local FLOOR_SHARE = 0.1
local MEANINGFUL_CHANGE = 0.1
local SWEEP_MAX = 64
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local op, known, recoverMs, token, channel = ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4], ARGV[5]

local E = KEYS[1]
local ep = redis.call('HMGET', E, 'id', 'at', 'until')
local epoch, recoverUntil = ep[1], tonumber(ep[3] or '0')
if not epoch then
  epoch = t[1] .. '.' .. t[2]
  redis.call('HSET', E, 'id', epoch, 'at', now)
  -- A caller that knew an epoch has seen grants given that this Redis no longer knows.
  if known ~= '' then
    recoverUntil = now + recoverMs
    redis.call('HSET', E, 'until', recoverUntil)
  end
elseif known ~= '' and known ~= epoch then
  local u = tonumber(ep[2]) + recoverMs
  if u > recoverUntil then
    recoverUntil = u
    redis.call('HSET', E, 'until', u)
  end
end
local recovering = now < recoverUntil

-- publish tells the replicas listening; a refusal (an ACL without the channel) costs them only promptness.
local function publish(kind, h)
  if channel ~= '' then redis.pcall('PUBLISH', channel, kind .. h) end
end

local function drop(h, z, c)
  local held = redis.call('HMGET', h, 'd:' .. c, 'g:' .. c)
  if held[1] then
    local g = tonumber(held[2] or '0')
    redis.call('HINCRBYFLOAT', h, 'D', 0 - tonumber(held[1]))
    redis.call('HINCRBY', h, 'G', 0 - g)
    if g == 0 then redis.call('HINCRBY', h, 'Z', -1) end
    redis.call('HINCRBY', h, 'n', -1)
    redis.call('HDEL', h, 'd:' .. c, 'g:' .. c)
  end
  redis.call('ZREM', z, c)
end

local function unhold(h, z, member)
  local p = redis.call('HGET', h, 'p:' .. member)
  if p then
    redis.call('HINCRBY', h, 'P', 0 - tonumber(p))
    redis.call('HDEL', h, 'p:' .. member)
  end
  redis.call('ZREM', z, member)
end

local function sweep(h, z)
  local expired = redis.call('ZRANGEBYSCORE', z, '-inf', now, 'LIMIT', 0, SWEEP_MAX)
  for _, m in ipairs(expired) do
    if string.sub(m, 1, 1) == '~' then unhold(h, z, m) else drop(h, z, m) end
  end
end

-- level is the water level of the bucket's demands (fair-share.ts waterLevelOf, in the same order).
local function level(h, limit)
  local all = redis.call('HGETALL', h)
  local raised = {}
  for i = 1, #all, 2 do
    if string.sub(all[i], 1, 2) == 'd:' then raised[#raised + 1] = tonumber(all[i + 1]) end
  end
  local m = #raised
  local floor = limit * FLOOR_SHARE / math.max(1, m)
  for i = 1, m do
    if raised[i] < floor then raised[i] = floor end
  end
  table.sort(raised)
  local left = limit
  for i = 1, m do
    local even = left / (m - i + 1)
    if raised[i] >= even then return even end
    left = left - raised[i]
  end
  return math.huge
end

local function target(d, n, D, limit, lvl)
  if n < 1 then n = 1 end
  if D < 0 then D = 0 end
  if D <= limit then return d + (limit - D) / n end
  local raised = math.max(d, limit * FLOOR_SHARE / n)
  if raised <= limit / n then return raised end
  return math.min(raised, lvl())
end

local function totals(h)
  local v = redis.call('HMGET', h, 'n', 'D', 'G', 'P')
  return tonumber(v[1] or '0'), tonumber(v[2] or '0'), tonumber(v[3] or '0') + tonumber(v[4] or '0')
end

local function meaningful(old, new)
  if new == old then return false end
  if old == 0 or new == 0 then return true end
  return math.abs(new - old) >= old * MEANINGFUL_CHANGE
end

-- grantOf: G counts the grants and the lowered grants still held.
local function grantOf(d, gOld, n, D, G, limit, lvl)
  local free = limit - (G - gOld)
  local g = math.floor(target(d, n, D, limit, lvl) + 1e-9)
  if g > free then g = free end
  if g < 0 then g = 0 end
  return g
end

-- lowered[h] is what this call lowered in bucket h: it stays held once the call is over, until
-- the caller settles the call's token (it has sent the lower grants) or the old grants expire.
-- Within the call it is free: the caller sends a call's grants in order, the lowered first.
local lowered = {}

local function record(h, z, c, gOld, g, ttlMs)
  if g < gOld then
    local l = lowered[h]
    if not l then
      l = { z = z, amount = 0, untilMs = now }
      lowered[h] = l
    end
    l.amount = l.amount + gOld - g
    local expiry = tonumber(redis.call('ZSCORE', z, c) or '0')
    if expiry > l.untilMs then l.untilMs = expiry end
  end
  if g ~= gOld then
    redis.call('HINCRBY', h, 'G', g - gOld)
    if gOld == 0 then redis.call('HINCRBY', h, 'Z', -1) elseif g == 0 then redis.call('HINCRBY', h, 'Z', 1) end
  end
  redis.call('HSET', h, 'g:' .. c, g)
  redis.call('ZADD', z, now + ttlMs, c)
  redis.call('PEXPIRE', h, ttlMs * 2)
  redis.call('PEXPIRE', z, ttlMs * 2)
  return g
end

-- grantOne returns the client's grant, or -1 when demand is nil and the bucket does not know it.
local function grantOne(h, z, c, e)
  local was = redis.call('HMGET', h, 'd:' .. c, 'g:' .. c)
  local dOld, gOld, cap = was[1], 0, e.held
  if not dOld then
    if e.demand == nil then return -1 end
    redis.call('HINCRBY', h, 'n', 1)
    redis.call('HINCRBY', h, 'Z', 1)
    publish('j', h)
    dOld = 0
  else
    dOld = tonumber(dOld)
    gOld = tonumber(was[2] or '0')
    cap = gOld
  end
  local d = dOld
  if e.demand ~= nil then
    redis.call('HINCRBYFLOAT', h, 'D', e.demand - dOld)
    redis.call('HSET', h, 'd:' .. c, e.demandText)
    d = e.demand
  end
  local n, D, G = totals(h)
  local g = grantOf(d, gOld, n, D, G, e.limit, function() return level(h, e.limit) end)
  if recovering and g > cap then g = cap end
  return record(h, z, c, gOld, g, e.ttlMs)
end

local out = {}
if op == 'grant' then
  -- KEYS: the sentinel, then hash and set per bucket. Then one report per argument: its client,
  -- then per bucket its index (1 for the first pair), limit, demand ('-' for none), ttlMs and held,
  -- all space-separated. Each bucket is swept once; the reports are granted in order.
  for i = 1, (#KEYS - 1) / 2 do sweep(KEYS[2 * i], KEYS[2 * i + 1]) end
  for r = 6, #ARGV do
    local next = string.gmatch(ARGV[r], '%S+')
    local c = next()
    for k in next do
      local limit, demandText, ttlMs, held = tonumber(next()), next(), tonumber(next()), tonumber(next())
      k = tonumber(k)
      local e = { limit = limit, demand = tonumber(demandText), demandText = demandText, ttlMs = ttlMs, held = held }
      out[#out + 1] = grantOne(KEYS[2 * k], KEYS[2 * k + 1], c, e)
    end
  end
elseif op == 'regrant' then
  -- Then: limit, ttlMs, clients...; KEYS: the sentinel, one bucket's hash and set.
  local h, z = KEYS[2], KEYS[3]
  local limit, ttlMs = tonumber(ARGV[6]), tonumber(ARGV[7])
  sweep(h, z)
  local n, D = totals(h)
  local lvl
  local function levelOnce()
    if lvl == nil then lvl = level(h, limit) end
    return lvl
  end
  local order = {}
  for i = 8, #ARGV do
    local c = ARGV[i]
    local held = redis.call('HMGET', h, 'd:' .. c, 'g:' .. c)
    out[i - 7] = -1
    if held[1] then
      local d, g = tonumber(held[1]), tonumber(held[2] or '0')
      order[#order + 1] = { i - 7, c, target(d, n, D, limit, levelOnce) - g, d, g }
    end
  end
  table.sort(order, function(a, b) return a[3] < b[3] end)
  for _, o in ipairs(order) do
    local c, d, gOld = o[2], o[4], o[5]
    local _, D2, G = totals(h)
    local g = grantOf(d, gOld, n, D2, G, limit, levelOnce)
    if recovering and g > gOld then g = gOld end
    if meaningful(gOld, g) then out[o[1]] = record(h, z, c, gOld, g, ttlMs) else out[o[1]] = gOld end
  end
elseif op == 'settle' then
  -- Then: handoverMs, tokens...; KEYS: the sentinel, then hash and set per bucket the tokens' calls touched.
  local handover = tonumber(ARGV[6])
  for i = 1, (#KEYS - 1) / 2 do
    local h, z = KEYS[2 * i], KEYS[2 * i + 1]
    local any = false
    for j = 7, #ARGV do
      local m = '~' .. ARGV[j]
      local s = redis.call('ZSCORE', z, m)
      if s then
        any = true
        if tonumber(s) > now + handover then redis.call('ZADD', z, now + handover, m) end
      end
    end
    if any then
      sweep(h, z)
      if tonumber(redis.call('HGET', h, 'Z') or '0') > 0 then publish('f', h) end
    end
  end
else
  -- release. Then: client; KEYS: the sentinel, then hash and set per bucket.
  for i = 1, (#KEYS - 1) / 2 do
    local h, z = KEYS[2 * i], KEYS[2 * i + 1]
    drop(h, z, ARGV[6])
    sweep(h, z)
    if tonumber(redis.call('HGET', h, 'n') or '0') <= 0 then
      redis.call('DEL', h, z)
    elseif tonumber(redis.call('HGET', h, 'Z') or '0') > 0 then
      publish('f', h)
    end
  end
end
local made = 0
for h, l in pairs(lowered) do
  redis.call('HINCRBY', h, 'P', l.amount)
  redis.call('HSET', h, 'p:~' .. token, l.amount)
  redis.call('ZADD', l.z, l.untilMs, '~' .. token)
  made = 1
end
table.insert(out, 1, made)
table.insert(out, 1, epoch)
return out
`;

/** QUOTA_SCRIPT is the ledger's script: its source and the SHA1 that EVALSHA names it by. */
export const QUOTA_SCRIPT = Object.freeze({
  name: 'rlqs-ledger',
  source: LUA,
  sha1: createHash('sha1').update(LUA).digest('hex'),
});
