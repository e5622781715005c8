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

local function reply(d)
  return { d.allowed and '1' or '0', fmt(d.remaining), fmt(d.retry_ms), fmt(d.reset_ms) }
end

local function read_cell(key, i)
  local s = redis.call('GETRANGE', key, 8 * i, 8 * i + 7)
  if #s < 8 then return 0 end
  return (struct.unpack('<d', s))
end

-- open_state loads a key's cells. A key whose state is at rest (restAt <= now) reads as fresh.
local function open_state(key, A, now)
  local vals, dirty = {}, {}
  local st = { key = key, A = A, vals = vals, dirty = dirty, fresh = false }
  if A.lazy then
    st.fresh = redis.call('EXISTS', key) == 0
  else
    local s = redis.call('GET', key)
    if not s then
      st.fresh = true
    elseif #s ~= 8 * A.width then
      fail('state of ' .. key .. ' holds ' .. #s .. ' bytes where ' .. 8 * A.width .. ' were expected')
    else
      for i = 0, A.width - 1 do vals[i] = (struct.unpack('<d', s, 8 * i + 1)) end
    end
  end
  st.cells = setmetatable({}, {
    __index = function(_, i)
      local v = vals[i]
      if v == nil then
        v = 0
        if A.lazy and not st.fresh then v = read_cell(key, i) end
        vals[i] = v
      end
      return v
    end,
    __newindex = function(_, i, v)
      vals[i] = v
      dirty[i] = true
    end,
  })
  if not st.fresh and A.rest_at(st.cells) <= now then
    redis.call('DEL', key)
    for i in pairs(vals) do vals[i] = nil end
    for i in pairs(dirty) do dirty[i] = nil end
    st.fresh = true
  end
  if st.fresh then A.init(st.cells, now) end
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
    redis.call('DEL', st.key)
    return
  end
  local px = string.format('%.0f', min(ceil(ttl_ms) + ttl_pad_ms, MAX_TTL_MS))
  if A.lazy then
    write_runs(st)
    redis.call('PEXPIRE', st.key, px)
    return
  end
  local parts = {}
  for i = 0, A.width - 1 do parts[i + 1] = struct.pack('<d', st.cells[i]) end
  redis.call('SET', st.key, table.concat(parts), 'PX', px)
end
`;
