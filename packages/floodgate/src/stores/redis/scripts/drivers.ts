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

/** BATCH_POLICY_ARGS is how many fields each policy of {@link BATCH_LUA} takes. */
export const BATCH_POLICY_ARGS = 4;

/** BATCH_ARGS is how many fields each decision of {@link BATCH_LUA} takes. */
export const BATCH_ARGS = 5;

/** BATCH_ANSWER_FIELDS is how many fields each decision of {@link BATCH_LUA} answers. */
export const BATCH_ANSWER_FIELDS = 4;

/**
 * BATCH_SEPARATOR ends every field of the batch script's one argument and of its one reply. No
 * field the store sends can hold it (numbers as `String` prints them, op and algorithm names); in
 * the reply, an error message (which may name a key holding anything) has it escaped.
 */
export const BATCH_SEPARATOR = ',';

/** BATCH_ESCAPES is how an error message in the batch reply writes the separator and the escape character itself. */
export const BATCH_ESCAPES: Readonly<Record<string, string>> = { '%': '%25', [BATCH_SEPARATOR]: '%2C' };

const LUA_ESCAPES = Object.entries(BATCH_ESCAPES)
  .map(([from, to]) => `[${JSON.stringify(from)}] = ${JSON.stringify(to)}`)
  .join(', ');

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
 * KEYS: the state keys the decisions name, each once. ARGV[1]: one string of fields, each ended by
 * {@link BATCH_SEPARATOR} (one argument, not one per field, is what keeps a client's work per
 * batch small): the number of policies P and of decisions D; then per policy 4 fields: algorithm
 * and three params ('0' when unused); then per decision 5 fields: its policy's number (1..P), its
 * key's number in KEYS, op (consume | peek | allN | and), test time or '' (the server's TIME, read
 * once per batch), cost. Policies and keys are sent once per batch, not once per decision: a hot
 * key decided 14 times in a tick is one argument, not 14, for the client to write and Redis to read.
 * Each policy is built once, and each key's state read and written once (its held states).
 * Reply: one string of 4 fields per decision, each ended by the separator: `allowed 1|0,
 * remaining, retryAfterMs, resetMs` as `fmt` prints them, or `E`, the message with
 * {@link BATCH_ESCAPES} applied, and two empty fields; a group's members answer as consume-all's
 * do (the group was admitted when every member says allowed).
 */
export const BATCH_LUA = String.raw`
-- Held states: a batch reads each small state from Redis once and writes it once. Its GETs, SETs
-- and DELs go to held, which stands for what Redis holds, and the writes reach Redis at the end,
-- each key's last one: a key decided 14 times in a batch costs one GET and one SET, not 14 of
-- each. A script is atomic, so nothing else can tell the difference.
-- held[key]: { cells = its cells as Redis would hold them now, or nil for none; width = their
--   number; raw = the string Redis held at the first read, until it is decoded (false: no key);
--   px = its TTL when written; dirty = whether it differs from Redis; existed = whether Redis had
--   the key at the first read; touched = the units that wrote it, or read it while dirty, since it
--   was last written to Redis }. A unit is a decision, or a group decided all or nothing, by its
--   first decision's number. Held cells are copied when read, so a decision that changes them
--   without committing (a group refused after its first member consumed) leaves them as they were.
local held, held_order, held_unit, held_failures = {}, {}, nil, {}

local function write_held(key, h)
  if h.cells then
    redis.call('SET', key, pack_cells(h.cells, h.width), 'PX', h.px)
  elseif h.existed then
    redis.call('DEL', key)
  end
end

-- flush writes a dirty held key to Redis. A write Redis refuses (OOM when full) fails the units
-- whose answers rested on it, as it would have failed each of them had it been written at once.
local function flush(key, h)
  local ok, err = pcall(write_held, key, h)
  if not ok then
    for _, unit in ipairs(h.touched) do held_failures[unit] = err end
  end
  h.dirty, h.touched = false, {}
end

-- entry_of is the held entry of a key, read from Redis on first use.
local function entry_of(key)
  local h = held[key]
  if h == nil then
    local raw = redis.call('GET', key)
    h = { raw = raw, existed = raw ~= false, dirty = false, touched = {} }
    held[key] = h
    held_order[#held_order + 1] = key
  end
  return h
end

local function touch(h)
  local touched = h.touched
  touched[#touched + 1] = held_unit
end

local function copy_cells(cells, width)
  if width <= 3 then return { [0] = cells[0], cells[1], cells[2] } end
  local copy = {}
  for i = 0, width - 1 do copy[i] = cells[i] end
  return copy
end

function state_io.read(key, width)
  local h = entry_of(key)
  if h.dirty then touch(h) end
  local cells = h.cells
  if cells == nil then
    if not h.raw then return nil end
    cells = decode(key, h.raw, width)
    h.cells, h.width, h.raw = cells, width, nil
  elseif h.width ~= width then
    wrong_size(key, 8 * h.width, width)
  end
  return copy_cells(cells, width)
end

function state_io.write(key, cells, width, px)
  local h = entry_of(key)
  h.cells, h.width, h.raw, h.px, h.dirty = cells, width, nil, px, true
  touch(h)
end

function state_io.del(key)
  local h = entry_of(key)
  h.cells, h.raw, h.dirty = nil, false, true
  touch(h)
end

-- A lazy state is read and written in Redis a cell at a time: Redis must first hold what was
-- decided before, and a later read reads it again.
function state_io.before_lazy(key)
  local h = held[key]
  if h == nil then return end
  if h.dirty then flush(key, h) end
  held[key] = nil
end

local made, out, server_now = {}, {}, nil
local SEP = '${BATCH_SEPARATOR}'
local ESCAPES = { ${LUA_ESCAPES} }
if #ARGV ~= 1 then fail('batch arguments: ' .. #ARGV .. ' where one string of fields was expected') end
local args = {}
for field in string.gmatch(ARGV[1], '([^' .. SEP .. ']*)' .. SEP) do args[#args + 1] = field end
local policy_count = tonumber(args[1]) or -1
local decision_count = tonumber(args[2]) or -1
local first = 3 + ${BATCH_POLICY_ARGS} * policy_count
if policy_count < 0 or decision_count < 0 or #args ~= first - 1 + ${BATCH_ARGS} * decision_count then
  fail('batch arguments: ' .. #args .. ' fields for ' .. tostring(args[2]) .. ' decisions and ' .. tostring(args[1]) .. ' policies')
end
-- A batch names few policies, keys, costs and group sizes, each many times: each text is read once.
local key_by_text, cost_by_text, size_by_op = {}, {}, {}
local function policy_of(text)
  local A = made[text]
  if A ~= nil then return A end
  local j = tonumber(text)
  if j == nil or j < 1 or j > policy_count or j ~= floor(j) then fail('bad policy number ' .. tostring(text)) end
  local base = 3 + ${BATCH_POLICY_ARGS} * (j - 1)
  local make = ALGORITHMS[args[base]]
  if make == nil then fail('unknown algorithm ' .. tostring(args[base])) end
  A = make({ num(args[base + 1]), num(args[base + 2]), num(args[base + 3]) })
  made[text] = A
  return A
end
local function key_of(text)
  local key = key_by_text[text]
  if key ~= nil then return key end
  key = KEYS[tonumber(text)]
  if key == nil then fail('bad key number ' .. tostring(text)) end
  key_by_text[text] = key
  return key
end
local function cost_of(text)
  local cost = cost_by_text[text]
  if cost ~= nil then return cost end
  cost = num(text)
  cost_by_text[text] = cost
  return cost
end
local function time_of(text)
  if text ~= '' then return now_ms(text) end
  if server_now == nil then server_now = now_ms('') end
  return server_now
end
-- answer is decision d's four fields as the reply holds them.
local function answer(d)
  local flag = '0' .. SEP
  if d.allowed then flag = '1' .. SEP end
  return flag .. text(d.remaining) .. SEP .. text(d.retry_ms) .. SEP .. text(d.reset_ms) .. SEP
end
local function run_one(i, base)
  local A = policy_of(args[base])
  local now = time_of(args[base + 3])
  local op, cost = args[base + 2], cost_of(args[base + 4])
  local st = open_state(key_of(args[base + 1]), A, now)
  if op == 'consume' then
    local d = A.consume(st.cells, now, cost)
    if d.allowed then commit(st, now) end
    out[i] = answer(d)
  elseif op == 'peek' then
    out[i] = answer(A.peek(st.cells, now, cost))
  else
    fail('unknown batch operation ' .. tostring(op))
  end
end
local function run_group(i, count)
  local now = time_of(args[first + ${BATCH_ARGS} * (i - 1) + 3])
  local states, order, decisions, all = {}, {}, {}, true
  for k = 1, count do
    local base = first + ${BATCH_ARGS} * (i + k - 2)
    if k > 1 and args[base + 2] ~= 'and' then fail('group member ' .. k .. ' of ' .. count .. ' is not "and"') end
    local key = key_of(args[base + 1])
    local st = states[key]
    if st == nil then
      st = open_state(key, policy_of(args[base]), now)
      states[key] = st
      order[#order + 1] = st
    end
    local d = st.A.consume(st.cells, now, cost_of(args[base + 4]))
    if not d.allowed then all = false end
    decisions[k] = d
  end
  if all then
    for _, st in ipairs(order) do commit(st, now) end
  end
  for k = 1, count do out[i + k - 1] = answer(decisions[k]) end
end
-- failed_answer is a unit's answer when it failed with err: 'E' and the message, escaped.
local function failed_answer(err)
  local message = err
  if type(err) == 'table' then message = err.err or err.message end
  local escaped = (string.gsub(tostring(message), '[%%' .. SEP .. ']', ESCAPES))
  return 'E' .. SEP .. escaped .. SEP .. SEP .. SEP
end
local unit_sizes = {}
local i = 1
while i <= decision_count do
  local base = first + ${BATCH_ARGS} * (i - 1)
  local op = args[base + 2]
  local count = nil
  if op ~= 'consume' and op ~= 'peek' then
    count = size_by_op[op]
    if count == nil then
      count = tonumber(string.match(op, '^all(%d+)$') or '') or false
      size_by_op[op] = count
    end
    if count == false then count = nil end
  end
  local ok, r
  held_unit = i
  if count == nil then
    count = 1
    ok, r = pcall(run_one, i, base)
  elseif count < 1 or i + count - 1 > decision_count then
    count, ok, r = 1, false, 'group of ' .. tostring(count) .. ' from decision ' .. i .. ' passes the end'
  else
    ok, r = pcall(run_group, i, count)
  end
  unit_sizes[i] = count
  if not ok then
    local failed = failed_answer(r)
    for k = i, i + count - 1 do out[k] = failed end
  end
  i = i + count
end
for _, key in ipairs(held_order) do
  local h = held[key]
  if h ~= nil and h.dirty then flush(key, h) end
end
for unit, err in pairs(held_failures) do
  local failed = failed_answer(err)
  for k = unit, unit + unit_sizes[unit] - 1 do out[k] = failed end
end
return table.concat(out)
`;
