/**
 * PREAMBLE_LUA is the Lua shared by every floodgate script: the time source, the tolerances and
 * rounding of `src/core/decision.ts` and `src/core/algorithm.ts`, number parsing and printing that
 * round-trip float64 exactly, and the state cells.
 *
 * State layout: one Redis string per key holding the algorithm's float64 cells, little-endian,
 * 8 bytes each, exactly the `Float64Array` the memory store keeps. Cells are read and written
 * through a proxy indexed from 0 like the TS code, so each algorithm's Lua reads like its TS twin.
 * Small states are read with one GET and written with one SET; a `lazy` algorithm (the sliding log,
 * whose state is one cell per unit of limit) reads cells with GETRANGE and writes the changed runs
 * with SETRANGE. Writes stay in the proxy until `commit`, so a refused request writes nothing.
 *
 * Held states: a script that decides many times (the batch) calls `hold_states` first and
 * `release_states` last. Between the two, a small state is read from Redis once and written once:
 * every GET, SET and DEL of it goes to a table standing for what Redis holds, and the writes reach
 * Redis at the end, each key's last one. A key decided 14 times in one batch then costs one GET
 * and one SET, not 14 of each. A script is atomic, so nothing else can tell the difference.
 *
 * Time: ARGV's time argument is used only when the store was built with `unsafeTestTime`; it is
 * '' otherwise and the script reads the server's `TIME`. In test mode keys get an extra hour of TTL,
 * because test times are not wall-clock times.
 */
export const PREAMBLE_LUA = String.raw`
local ALGORITHMS = {}
-- Tolerance for comparing counts and costs under a policy's limit: src/core/algorithm.ts countSlack.
local function count_slack(limit)
  return 1e-12 * math.max(1, limit)
end
local TIME_EPSILON_MS = 1e-3
local INF = math.huge
local floor, ceil, min, max = math.floor, math.ceil, math.min, math.max
local TEST_TTL_PAD_MS = 3600000
local MAX_TTL_MS = 9007199254740991
local ttl_pad_ms = 0

local function fail(what)
  error({ err = 'FLOODGATE ' .. what })
end

-- num parses a number as JS String() prints it (including Infinity); anything else fails.
local function num(s)
  if s == 'Infinity' then return INF end
  if s == '-Infinity' then return -INF end
  local n = tonumber(s)
  if n == nil or n ~= n then fail('bad number argument: ' .. tostring(s)) end
  return n
end

-- fmt prints a number so that JS Number() reads back the same float64.
local function fmt(n)
  if n == INF then return 'Infinity' end
  if n == -INF then return '-Infinity' end
  if n ~= n then return 'NaN' end
  return string.format('%.17g', n)
end

-- text prints a number as fmt does, sooner for a whole number below 2^53 (which '%.17g' prints
-- as all its digits, no exponent): every field of a decision, for any sane limit.
local function text(n)
  if n == 0 then return '0' end
  if n > 0 and n < 9007199254740992 and n % 1 == 0 then return string.format('%d', n) end
  return fmt(n)
end

-- now_ms is the test time when one is given, else the server's clock, in ms (microsecond fractions).
local function now_ms(arg)
  if arg ~= '' then
    ttl_pad_ms = TEST_TTL_PAD_MS
    return num(arg)
  end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
end

-- ceil_ms and decision are src/core/decision.ts's ceilMs and makeDecision.
local function ceil_ms(ms)
  if ms > 1e-9 then return ceil(ms - 1e-9) end
  return 0
end

local function decision(allowed, remaining, retry_ms, reset_ms)
  local left = 0
  if remaining > 0 then left = floor(remaining + 1e-9) end
  if allowed then return { allowed = true, remaining = left, retry_ms = 0, reset_ms = ceil_ms(reset_ms) } end
  return { allowed = false, remaining = left, retry_ms = ceil_ms(retry_ms), reset_ms = ceil_ms(reset_ms) }
end

-- field is a decision field as sent: a whole number below 2^53 (every finite one, for any sane
-- limit) as an integer reply, which costs neither side a string; anything else as fmt prints it.
local function field(n)
  if n >= 0 and n < 9007199254740992 and n % 1 == 0 then return n end
  return fmt(n)
end

-- push_reply appends a decision's four reply fields to out from index n + 1.
local function push_reply(out, n, d)
  out[n + 1] = d.allowed and 1 or 0
  out[n + 2] = field(d.remaining)
  out[n + 3] = field(d.retry_ms)
  out[n + 4] = field(d.reset_ms)
end

local function reply(d)
  local out = {}
  push_reply(out, 0, d)
  return out
end

local function read_cell(key, i)
  local s = redis.call('GETRANGE', key, 8 * i, 8 * i + 7)
  if #s < 8 then return 0 end
  return (struct.unpack('<d', s))
end

-- Cell formats by width: one struct call packs or unpacks a whole small state.
local FORMATS = {}
local function format_of(width)
  local f = FORMATS[width]
  if f == nil then
    f = '<' .. string.rep('d', width)
    FORMATS[width] = f
  end
  return f
end

-- Small states (not lazy) live in a plain table indexed from 0; cells never written read 0.
local function unpack_cells(s, width)
  local cells = {}
  if width <= 3 then
    cells[0], cells[1], cells[2] = struct.unpack(format_of(width), s)
    -- Past the cells, struct.unpack returns the next position: not a cell.
    for i = width, 2 do cells[i] = nil end
  elseif width <= 16 then
    local v = { struct.unpack(format_of(width), s) }
    for i = 0, width - 1 do cells[i] = v[i + 1] end
  else
    for i = 0, width - 1 do cells[i] = (struct.unpack('<d', s, 8 * i + 1)) end
  end
  return cells
end

local function pack_cells(cells, width)
  if width <= 16 then return struct.pack(format_of(width), unpack(cells, 0, width - 1)) end
  local parts = {}
  for i = 0, width - 1 do parts[i + 1] = struct.pack('<d', cells[i]) end
  return table.concat(parts)
end

-- A lazy state's cells: a proxy reading cells on first use and recording which were written.
local function lazy_cells(st)
  local vals, dirty = {}, {}
  st.vals, st.dirty = vals, dirty
  return setmetatable({}, {
    __index = function(_, i)
      local v = vals[i]
      if v == nil then
        v = 0
        if not st.fresh then v = read_cell(st.key, i) end
        vals[i] = v
      end
      return v
    end,
    __newindex = function(_, i, v)
      vals[i] = v
      dirty[i] = true
    end,
  })
end

local function fresh_cells(st, width)
  if st.A.lazy then return lazy_cells(st) end
  local cells = {}
  for i = 0, width - 1 do cells[i] = 0 end
  return cells
end

-- open_state loads a key's cells. A key whose state is at rest (restAt <= now) reads as fresh:
-- it is deleted at once, so a clock that later goes back never finds it again.
-- st.exists says whether the key is in Redis now, so a commit at rest deletes only what is there.
-- held: nil, or while states are held (see hold_states), each small state read or written so far:
-- { cells = its cells as Redis would hold them now, or nil for none; width = their number;
--   raw = the string Redis held at the first read, until it is decoded (false: no key);
--   px = its TTL when written; dirty = whether it differs from Redis; existed = whether Redis had
--   the key at the first read; touched = the units (see hold_unit) that wrote it, or read it while
--   dirty, since it was last written to Redis }.
-- Held cells are copied when read, so a decision that changes them without committing (a group
-- refused after its first member consumed) leaves them as they were.
local held, held_order, held_unit, held_failures = nil, nil, nil, nil

-- hold_states starts holding states: until release_states, reads and writes of small states go to
-- held, and reach Redis once, at the end.
local function hold_states()
  held, held_order, held_failures = {}, {}, {}
end

-- hold_unit names the unit (a decision, or a group decided all or nothing) deciding from now on.
local function hold_unit(unit)
  held_unit = unit
end

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

-- release_states writes each held key's last cells to Redis, in the order the keys were first
-- read, stops holding, and returns the units whose writes failed: unit -> the error.
local function release_states()
  local hs, order, failures = held, held_order, held_failures
  for _, key in ipairs(order) do
    local h = hs[key]
    if h ~= nil and h.dirty then flush(key, h) end
  end
  held, held_order, held_failures = nil, nil, nil
  return failures
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

-- unhold writes a held key's pending cells now and forgets it: a lazy state reads and writes
-- Redis a cell at a time, so Redis must hold what was decided before (a later read reads it again).
local function unhold(key)
  local h = held[key]
  if h == nil then return end
  if h.dirty then flush(key, h) end
  held[key] = nil
end

-- decode returns the cells of a state Redis holds as s, or fails when s is not width cells.
local function decode(key, s, width)
  if #s ~= 8 * width then
    fail('state of ' .. key .. ' holds ' .. #s .. ' bytes where ' .. 8 * width .. ' were expected')
  end
  return unpack_cells(s, width)
end

local function copy_cells(cells, width)
  if width <= 3 then return { [0] = cells[0], cells[1], cells[2] } end
  local copy = {}
  for i = 0, width - 1 do copy[i] = cells[i] end
  return copy
end

-- read_cells returns the cells of key's small state (a copy while held), or nil when it has none.
local function read_cells(key, width)
  if held == nil then
    local s = redis.call('GET', key)
    return s and decode(key, s, width) or nil
  end
  local h = entry_of(key)
  if h.dirty then touch(h) end
  local cells = h.cells
  if cells == nil then
    if not h.raw then return nil end
    cells = decode(key, h.raw, width)
    h.cells, h.width, h.raw = cells, width, nil
  elseif h.width ~= width then
    fail('state of ' .. key .. ' holds ' .. 8 * h.width .. ' bytes where ' .. 8 * width .. ' were expected')
  end
  return copy_cells(cells, width)
end

local function write_cells(key, cells, width, px)
  if held == nil then
    redis.call('SET', key, pack_cells(cells, width), 'PX', px)
    return
  end
  local h = entry_of(key)
  h.cells, h.width, h.raw, h.px, h.dirty = cells, width, nil, px, true
  touch(h)
end

local function del_state(key)
  if held == nil then
    redis.call('DEL', key)
    return
  end
  local h = entry_of(key)
  h.cells, h.raw, h.dirty = nil, false, true
  touch(h)
end

local function open_state(key, A, now)
  local width = A.width
  local st = { key = key, A = A, fresh = false, exists = true, cells = false }
  if A.lazy then
    if held ~= nil then unhold(key) end
    st.fresh = redis.call('EXISTS', key) == 0
    st.cells = lazy_cells(st)
  else
    local cells = read_cells(key, width)
    if cells == nil then
      st.fresh = true
    else
      st.cells = cells
    end
  end
  if not st.fresh and A.rest_at(st.cells) <= now then
    if A.lazy then redis.call('DEL', key) else del_state(key) end
    st.fresh = true
  end
  if st.fresh then
    st.exists = false
    st.cells = fresh_cells(st, width)
    A.init(st.cells, now)
  end
  return st
end

local function write_runs(st)
  local idx = {}
  for i in pairs(st.dirty) do idx[#idx + 1] = i end
  table.sort(idx)
  local j = 1
  while j <= #idx do
    local first, parts = idx[j], {}
    repeat
      parts[#parts + 1] = struct.pack('<d', st.vals[idx[j]])
      j = j + 1
    until j > #idx or idx[j] ~= idx[j - 1] + 1
    redis.call('SETRANGE', st.key, 8 * first, table.concat(parts))
  end
end

-- commit writes the state with a TTL ending when it comes to rest, or deletes it when at rest now.
local function commit(st, now)
  local A = st.A
  local ttl_ms = A.rest_at(st.cells) - now
  if not (ttl_ms > 0) then
    if not st.exists then return end
    if A.lazy then redis.call('DEL', st.key) else del_state(st.key) end
    return
  end
  -- A whole number below 2^53: redis.call prints it with '%.17g', all digits, no exponent.
  local px = min(ceil(ttl_ms) + ttl_pad_ms, MAX_TTL_MS)
  if A.lazy then
    write_runs(st)
    redis.call('PEXPIRE', st.key, px)
    return
  end
  write_cells(st.key, st.cells, A.width, px)
end
`;
