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
 * Small states are read and written through `state_io`, straight in Redis; the batch script
 * replaces it with held states (see `BATCH_LUA`).
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

-- whole says whether n is a whole number from 0 to below 2^53: every field of a decision, for any
-- sane limit. '%.17g' prints such a number as all its digits, with no exponent, as '%d' does.
local function whole(n)
  return n >= 0 and n < 9007199254740992 and n % 1 == 0
end

-- text prints a number as fmt does, sooner when it is whole.
local function text(n)
  if n == 0 then return '0' end
  if whole(n) then return string.format('%d', n) end
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
  if whole(n) then return n end
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

-- wrong_size fails for key's state when it holds that many bytes, read as width cells.
local function wrong_size(key, bytes, width)
  fail('state of ' .. key .. ' holds ' .. bytes .. ' bytes where ' .. 8 * width .. ' were expected')
end

-- decode returns the cells of a state Redis holds as s, or fails when s is not width cells.
local function decode(key, s, width)
  if #s ~= 8 * width then wrong_size(key, #s, width) end
  return unpack_cells(s, width)
end

-- state_io is how open_state and commit read, write and delete a small state: here straight in
-- Redis, one GET and one SET a decision. The batch script holds states instead (see BATCH_LUA's
-- held states): it replaces these four, so only it pays for defining its own.
local state_io = {}

-- read returns the cells of key's small state, or nil when it has none.
function state_io.read(key, width)
  local s = redis.call('GET', key)
  return s and decode(key, s, width) or nil
end

function state_io.write(key, cells, width, px)
  redis.call('SET', key, pack_cells(cells, width), 'PX', px)
end

function state_io.del(key)
  redis.call('DEL', key)
end

-- before_lazy runs before a lazy state (read and written a cell at a time) is opened.
function state_io.before_lazy(key)
end

-- open_state loads a key's cells. A key whose state is at rest (restAt <= now) reads as fresh:
-- it is deleted at once, so a clock that later goes back never finds it again.
-- st.exists says whether the key is in Redis now, so a commit at rest deletes only what is there.
local function open_state(key, A, now)
  local width = A.width
  local st = { key = key, A = A, fresh = false, exists = true, cells = false }
  if A.lazy then
    state_io.before_lazy(key)
    st.fresh = redis.call('EXISTS', key) == 0
    st.cells = lazy_cells(st)
  else
    local cells = state_io.read(key, width)
    if cells == nil then
      st.fresh = true
    else
      st.cells = cells
    end
  end
  if not st.fresh and A.rest_at(st.cells) <= now then
    if A.lazy then redis.call('DEL', key) else state_io.del(key) end
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
    if A.lazy then redis.call('DEL', st.key) else state_io.del(st.key) end
    return
  end
  -- A whole number below 2^53: redis.call prints it with '%.17g', all digits, no exponent.
  local px = min(ceil(ttl_ms) + ttl_pad_ms, MAX_TTL_MS)
  if A.lazy then
    write_runs(st)
    redis.call('PEXPIRE', st.key, px)
    return
  end
  state_io.write(st.key, st.cells, A.width, px)
end
`;
