import { createHash } from 'node:crypto';
import { FIXED_WINDOW_RULE } from './fixed-window.js';
import { GCRA_RULE } from './gcra.js';
import type { LuaScript } from './index.js';
import { PREAMBLE_LUA } from './preamble.js';
import type { LuaModule, LuaRule } from './rule.js';
import { TOKEN_BUCKET_RULE } from './token-bucket.js';

/**
 * LEASE_LUA is the driver of the lease scripts: `src/leases/lease-ledger.ts`'s `askLease` and
 * `returnLease` in Lua, operation for operation in the same order, on the policy's own state (the
 * key per-request decisions use, so leasing and non-leasing processes share one limit) and a
 * ledger of holders beside it.
 *
 * KEYS[1]: the policy's state key. KEYS[2]: the ledger, a hash in the same slot (field: a holder's
 * id; value: `demand held expiresAtMs credit creditAtMs`, numbers as `fmt` prints them). The
 * ledger lives as long as its latest holder's record.
 *
 * ARGV: [1] algorithm, [2] op (`ask` | `return`), [3] test time in ms or '' (read TIME), [4] the
 * holder's id, [5..8] the op's numbers, [9] maxOutstanding, [10] leaseMs, [11] ratePerMs, [12]
 * windowMs (0: not a fixed window), [13..] the policy's params.
 * - `ask demand held wanted spend`: reply `{spent, remaining, retryAfterMs, resetMs, granted,
 *   durationMs, expiresAtMs, nextAskInMs, holders}`, each as `fmt` prints it.
 * - `return units expiresAtMs held leaving(1|0)`: reply the units given back, as `fmt` prints them.
 */
export const LEASE_LUA = String.raw`
local CONTENDED_MULTIPLE = 2
local NEXT_ASK_CREDIT = 0.75
local CREDIT_PORTIONS = 4
local params = {}
for i = 13, #ARGV do params[#params + 1] = num(ARGV[i]) end
local make = ALGORITHMS[ARGV[1]]
if make == nil then fail('unknown algorithm ' .. tostring(ARGV[1])) end
local A = make(params)
local op, key, ledger, id = ARGV[2], KEYS[1], KEYS[2], ARGV[4]
local now = now_ms(ARGV[3])
local a, b, c, d4 = num(ARGV[5]), num(ARGV[6]), num(ARGV[7]), num(ARGV[8])
local M, lease_ms, rate_per_ms, window_ms = num(ARGV[9]), num(ARGV[10]), num(ARGV[11]), num(ARGV[12])
local slack = count_slack(A.limit)

-- The holders whose record has not ended, in the order HGETALL gives (sums are of whole numbers).
local holders, count, gone = {}, 0, {}
local raw = redis.call('HGETALL', ledger)
for i = 1, #raw, 2 do
  local f = {}
  for w in string.gmatch(raw[i + 1], '%S+') do f[#f + 1] = num(w) end
  if #f ~= 5 then fail('lease ledger ' .. ledger .. ' holds a bad record for ' .. raw[i]) end
  if f[3] <= now then
    gone[#gone + 1] = raw[i]
  else
    holders[raw[i]] = { demand = f[1], held = f[2], expires = f[3], credit = f[4], credit_at = f[5] }
    count = count + 1
  end
end
if #gone > 0 then redis.call('HDEL', ledger, unpack(gone)) end

local function save(h)
  redis.call('HSET', ledger, id, fmt(h.demand) .. ' ' .. fmt(h.held) .. ' ' .. fmt(h.expires) .. ' ' .. fmt(h.credit) .. ' ' .. fmt(h.credit_at))
end

local function expire_ledger()
  local last = -INF
  for _, h in pairs(holders) do last = max(last, h.expires) end
  if last == -INF then
    redis.call('DEL', ledger)
  else
    redis.call('PEXPIRE', ledger, min(ceil(last - now) + ttl_pad_ms, MAX_TTL_MS))
  end
end

local st = open_state(key, A, now)

if op == 'return' then
  local given = 0
  if a > 0 and now < b then given = a end
  if given > 0 and not st.fresh then
    A.refund(st.cells, now, given)
    commit(st, now)
  end
  local me = holders[id]
  if me ~= nil then
    if d4 == 1 then
      holders[id] = nil
      redis.call('HDEL', ledger, id)
    else
      me.held = c
      save(me)
    end
    expire_ledger()
  end
  return fmt(given)
end
if op ~= 'ask' then fail('unknown lease operation ' .. tostring(op)) end

local demand, held, wanted, spend = a, b, c, d4
local me = holders[id]
if me == nil then
  me = { demand = 0, held = 0, expires = now, credit = -1, credit_at = now }
  holders[id] = me
  count = count + 1
end
me.demand = demand
me.held = held
local total, others_held = 0, 0
for hid, h in pairs(holders) do
  total = total + h.demand
  if hid ~= id then others_held = others_held + h.held end
end
local share
if total > 0 then share = me.demand / total else share = 1 / count end
local portion = M * share
local credit_cap = max(CREDIT_PORTIONS * portion, spend, 1)
local credit_per_ms = rate_per_ms * share
if me.credit < 0 then
  me.credit = max(portion, spend, 1)
else
  me.credit = min(credit_cap, me.credit + max(0, now - me.credit_at) * credit_per_ms)
end
me.credit_at = max(me.credit_at, now)
local contended = A.peek(st.cells, now, 0).remaining < CONTENDED_MULTIPLE * M
local d, spent, credit_wait_ms, changed = nil, false, 0, false
if spend > 0 then
  if contended and me.credit + slack < spend then
    d = A.peek(st.cells, now, spend)
    if credit_per_ms > 0 then credit_wait_ms = (spend - me.credit) / credit_per_ms else credit_wait_ms = INF end
  else
    d = A.consume(st.cells, now, spend)
    spent = d.allowed
    if spent then
      me.credit = max(0, me.credit - spend)
      changed = true
    end
  end
end
local granted = 0
if spend == 0 or spent then
  local left = A.peek(st.cells, now, 0).remaining
  local room = min(wanted, portion - held, M - others_held - held, left)
  if contended then room = min(room, me.credit) end
  if room > 0 then granted = floor(room + slack) end
  if granted > 0 and A.consume(st.cells, now, granted).allowed then
    me.credit = max(0, me.credit - granted)
    me.held = held + granted
    changed = true
  else
    granted = 0
  end
end
local duration_ms = lease_ms
if window_ms > 0 then
  local end_ms = floor(now / window_ms) * window_ms + window_ms
  duration_ms = min(lease_ms, end_ms - now)
end
me.expires = max(me.expires, now + lease_ms)
save(me)
expire_ledger()
if changed then commit(st, now) end
local after = d
if after == nil then after = A.peek(st.cells, now, 0) end
local next_ask_ms = 0
local usable = min(me.credit, A.peek(st.cells, now, 0).remaining)
if contended and credit_per_ms > 0 then next_ask_ms = max(0, (NEXT_ASK_CREDIT * max(portion, 1) - usable) / credit_per_ms) end
local retry_ms = 0
if not spent then retry_ms = ceil(max(after.retry_ms, credit_wait_ms)) end
return {
  spent and '1' or '0', fmt(after.remaining), fmt(retry_ms), fmt(after.reset_ms), fmt(granted),
  fmt(duration_ms), fmt(now + duration_ms), fmt(ceil(next_ask_ms)), fmt(count),
}
`;

/** The rules leases run on: the policies whose units come back exactly through `refund`. */
const LEASE_RULES: readonly LuaRule[] = [TOKEN_BUCKET_RULE, FIXED_WINDOW_RULE, GCRA_RULE];

/** LEASE_SCRIPTS are the lease scripts by Lua module: preamble, the policy's rule, and the lease operations (`LEASE_LUA`). */
export const LEASE_SCRIPTS: Readonly<Partial<Record<LuaModule, LuaScript>>> = Object.fromEntries(
  LEASE_RULES.map((rule) => {
    const source = PREAMBLE_LUA + rule.source + LEASE_LUA;
    const script: LuaScript = {
      name: `lease-${rule.module}`,
      source,
      sha1: createHash('sha1').update(source).digest('hex'),
    };
    return [rule.module, script];
  }),
);
