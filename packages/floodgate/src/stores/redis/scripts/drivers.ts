/**
 * DECIDE_LUA is the driver of the per-algorithm scripts: one operation on one key.
 *
 * KEYS[1]: the state key. ARGV: [1] algorithm, [2] op (consume | peek | refund | reserve | charge |
 * reset), [3] test time in ms or '' (read TIME), [4] cost, [5] maxWaitMs (reserve), [6..] the params.
 * Replies: consume and peek `{allowed 1|0, remaining, retryAfterMs, resetMs}` (integers, or
 * strings as `fmt` prints them when not whole);
 * reserve the wait in ms as a string ('-1': refused, nothing charged); refund and reset `1`;
 * charge the cost charged, as a string.
 *
 * `charge` is the write-back of what was admitted while Redis was away: it charges `cost`, or as
 * much of it as the key still has room for (what a refusal reports as remaining), never more: the
 * key ends spent, not in debt, and its later decisions are the policy's own.
 */
export const DECIDE_LUA = String.raw`
local params = {}
for i = 6, #ARGV do params[#params + 1] = num(ARGV[i]) end
local make = ALGORITHMS[ARGV[1]]
if make == nil then fail('unknown algorithm ' .. tostring(ARGV[1])) end
local A = make(params)
local op, key = ARGV[2], KEYS[1]
local now = now_ms(ARGV[3])
if op == 'reset' then
  redis.call('DEL', key)
  return 1
end
local cost = num(ARGV[4])
local st = open_state(key, A, now)
if op == 'consume' then
  local d = A.consume(st.cells, now, cost)
  if d.allowed then commit(st, now) end
  return reply(d)
elseif op == 'peek' then
  return reply(A.peek(st.cells, now, cost))
elseif op == 'refund' then
  -- A key never seen (or at rest) is already full: nothing to give back, nothing to store.
  if not st.fresh then
    A.refund(st.cells, now, cost)
    commit(st, now)
  end
  return 1
elseif op == 'charge' then
  local take = cost
  local d = A.peek(st.cells, now, cost)
  if not d.allowed then take = min(cost, d.remaining) end
  if take > 0 and A.consume(st.cells, now, take).allowed then
    commit(st, now)
  else
    take = 0
  end
  return fmt(take)
elseif op == 'reserve' and A.reserve ~= nil then
  local wait_ms = A.reserve(st.cells, now, cost, num(ARGV[5]))
  if wait_ms >= 0 then commit(st, now) end
  return fmt(wait_ms)
end
fail('unknown operation ' .. tostring(op) .. ' for ' .. ARGV[1])
`;

/** ENTRY_ARGS is how many ARGV slots each request of {@link CONSUME_ALL_LUA} takes. */
export const ENTRY_ARGS = 5;

/**
 * CONSUME_ALL_LUA is the driver of the all-or-nothing script: several requests, each on its own
 * key and policy, admitted together or not at all.
 *
 * KEYS[i]: request i's state key. ARGV: [1] test time or '', then per request 5 slots:
 * algorithm, cost, and three params ('0' when unused). Each request is tried in order on a working
 * copy of its key's state (a key named twice sees the earlier charge); only when every request is
 * admitted are the states written. Reply: `{all '1'|'0', then per request allowed, remaining,
 * retryAfterMs, resetMs}` as the decide script sends them.
 */
export const CONSUME_ALL_LUA = String.raw`
local now = now_ms(ARGV[1])
local states, order, out, all = {}, {}, { '1' }, true
for i = 1, #KEYS do
  local base = 2 + (i - 1) * ${ENTRY_ARGS}
  local make = ALGORITHMS[ARGV[base]]
  if make == nil then fail('unknown algorithm ' .. tostring(ARGV[base])) end
  local key = KEYS[i]
  local st = states[key]
  if st == nil then
    st = open_state(key, make({ num(ARGV[base + 2]), num(ARGV[base + 3]), num(ARGV[base + 4]) }), now)
    states[key] = st
    order[#order + 1] = st
  end
  local d = st.A.consume(st.cells, now, num(ARGV[base + 1]))
  if not d.allowed then all = false end
  push_reply(out, #out, d)
end
if not all then
  out[1] = '0'
  return out
end
for _, st in ipairs(order) do commit(st, now) end
return out
`;

/** BATCH_POLICY_ARGS is how many ARGV slots each policy of {@link BATCH_LUA} takes. */
export const BATCH_POLICY_ARGS = 4;

/** BATCH_ARGS is how many ARGV slots each decision of {@link BATCH_LUA} takes. */
export const BATCH_ARGS = 4;

/**
 * BATCH_LUA is the driver of the batch script: several independent decisions (consume or peek),
 * each on its own key and policy, applied one after another in order, as if each had been its own
 * script: a key named twice sees the earlier charge. One decision's failure (a corrupt state, an
 * unknown algorithm) is reported for it alone; the others still run.
 *
 * A group of N decisions (op `allN` on its first, `and` on the N - 1 after it) is one request's
 * limits decided all or nothing, as {@link CONSUME_ALL_LUA} does: each member is tried on a
 * working copy of its key's state, at the group's first member's time, and the states are written
 * only when every member admits. A group fails or succeeds as a whole.
 *
 * KEYS[i]: decision i's state key. ARGV: [1] the number of policies P; then per policy 4 slots:
 * algorithm and three params ('0' when unused); then per decision 4 slots: its policy's number
 * (1..P), op (consume | peek | allN | and), test time or '' (the server's TIME, read once per
 * batch), cost. Policies are sent once per batch, not once per decision, and each is built once.
 * Reply: per decision `allowed 1|0, remaining, retryAfterMs, resetMs` (integers, or strings as
 * `fmt` prints them when not whole), or `'E', message, '', ''`; a group's members answer as
 * consume-all's do (the group was admitted when every member says allowed).
 */
export const BATCH_LUA = String.raw`
local made, out, server_now = {}, {}, nil
local policy_count = tonumber(ARGV[1]) or -1
local first = 2 + ${BATCH_POLICY_ARGS} * policy_count
if policy_count < 0 or #ARGV ~= first - 1 + ${BATCH_ARGS} * #KEYS then
  fail('batch arguments: ' .. #ARGV .. ' for ' .. #KEYS .. ' keys and ' .. tostring(ARGV[1]) .. ' policies')
end
local function policy_of(text)
  local j = tonumber(text)
  local A = made[j]
  if A ~= nil then return A end
  if j == nil or j < 1 or j > policy_count or j ~= floor(j) then fail('bad policy number ' .. tostring(text)) end
  local base = 2 + ${BATCH_POLICY_ARGS} * (j - 1)
  local make = ALGORITHMS[ARGV[base]]
  if make == nil then fail('unknown algorithm ' .. tostring(ARGV[base])) end
  A = make({ num(ARGV[base + 1]), num(ARGV[base + 2]), num(ARGV[base + 3]) })
  made[j] = A
  return A
end
local function time_of(text)
  if text ~= '' then return now_ms(text) end
  if server_now == nil then server_now = now_ms('') end
  return server_now
end
local function run_one(i, base, n)
  local A = policy_of(ARGV[base])
  local now = time_of(ARGV[base + 2])
  local op, cost = ARGV[base + 1], num(ARGV[base + 3])
  local st = open_state(KEYS[i], A, now)
  if op == 'consume' then
    local d = A.consume(st.cells, now, cost)
    if d.allowed then commit(st, now) end
    push_reply(out, n, d)
  elseif op == 'peek' then
    push_reply(out, n, A.peek(st.cells, now, cost))
  else
    fail('unknown batch operation ' .. tostring(op))
  end
end
local function run_group(i, count)
  local now = time_of(ARGV[first + ${BATCH_ARGS} * (i - 1) + 2])
  local states, order, decisions, all = {}, {}, {}, true
  for k = 1, count do
    local base = first + ${BATCH_ARGS} * (i + k - 2)
    if k > 1 and ARGV[base + 1] ~= 'and' then fail('group member ' .. k .. ' of ' .. count .. ' is not "and"') end
    local key = KEYS[i + k - 1]
    local st = states[key]
    if st == nil then
      st = open_state(key, policy_of(ARGV[base]), now)
      states[key] = st
      order[#order + 1] = st
    end
    local d = st.A.consume(st.cells, now, num(ARGV[base + 3]))
    if not d.allowed then all = false end
    decisions[k] = d
  end
  if all then
    for _, st in ipairs(order) do commit(st, now) end
  end
  for k = 1, count do push_reply(out, 4 * (i + k - 2), decisions[k]) end
end
local i = 1
while i <= #KEYS do
  local base = first + ${BATCH_ARGS} * (i - 1)
  local count = tonumber(string.match(ARGV[base + 1], '^all(%d+)$') or '')
  local ok, r
  if count == nil then
    count = 1
    ok, r = pcall(run_one, i, base, 4 * (i - 1))
  elseif count < 1 or i + count - 1 > #KEYS then
    count, ok, r = 1, false, 'group of ' .. tostring(count) .. ' from decision ' .. i .. ' passes the end'
  else
    ok, r = pcall(run_group, i, count)
  end
  if not ok then
    local message = r
    if type(r) == 'table' then message = r.err or r.message end
    for k = i, i + count - 1 do
      local n = 4 * (k - 1)
      out[n + 1], out[n + 2], out[n + 3], out[n + 4] = 'E', tostring(message), '', ''
    end
  end
  i = i + count
end
return out
`;
