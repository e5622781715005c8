import { createHash } from 'node:crypto';
import type { LuaScript } from './index.js';
import { textOf } from '../runner.js';
import { integerOf } from './semaphore.js';

/**
 * SMOOTH_LUA is the one script behind `RedisSmoothLimiter`: Guava's SmoothBursty and
 * SmoothWarmingUp with the state in Redis, so a fleet of processes shares one limiter. It restates
 * the rules of `src/core/smooth/smooth-state.ts` (resync, setRate, reserve, tryReserve, release)
 * and of the two permit storages, operation for operation in the same order, so the doubles come
 * out bit for bit the same; a differential test runs both on the same random operations.
 *
 * State: KEYS[1] is a string of 10 little-endian float64 cells: stored permits, max permits, stable
 * interval (µs), next-free moment (µs), version, model (1 bursty, 2 warming up), the model's two
 * parameters (max burst seconds | warm-up µs, cold factor), and what the latest reservation found
 * (stored permits and next-free moment, brought up to its `now`). The version counts every change
 * of the schedule, so a release can tell that its reservation is still the latest, and undo it. Moments are
 * whole µs on the server's `TIME` (exact in a double up to 2^53 µs, the year 2255: a reservation
 * that would push the next-free moment further is capped there, where Java's long saturates later).
 *
 * ARGV: [1] test time in µs, or '' to read `TIME`; [2] model ('bursty' | 'warmingUp'), [3] and [4]
 * its parameters; [5] the rate a missing state is created with (Guava's `create`: the first call
 * on a name creates the fleet's limiter, at that moment); [6] how long the key outlives its
 * next-free moment, in ms ('' for ever). Then operations, 4 slots each, applied in order:
 * - `r permits timeoutMicros`: reserve; with a timeout ('' for none) only when the wait fits.
 * - `s rate`: setRate.
 * - `x version`: release the reservation that left `version`, if it is still the latest and not yet due.
 * - `g`: read (creates the state like any other).
 * Reply: `now` in µs, then 5 fields per operation: done (1 | 0), wait µs, start µs, version after
 * it, and a text: the stable interval after `s` and `g` ('' otherwise).
 * A state made under another model or parameters fails the call (`FLOODGATE smooth-model ...`).
 */
export const SMOOTH_LUA = String.raw`
local floor, ceil, min = math.floor, math.ceil, math.min
local NEVER = 9007199254740992
local key = KEYS[1]

local function fail(what)
  error({ err = 'FLOODGATE ' .. what })
end

local function num(s)
  local n = tonumber(s)
  if n == nil or n ~= n then fail('bad number argument: ' .. tostring(s)) end
  return n
end

-- fmt prints a number so that JS Number() reads back the same float64.
local function fmt(n)
  if n == math.huge then return 'Infinity' end
  if n == -math.huge then return '-Infinity' end
  if n ~= n then return 'NaN' end
  return string.format('%.17g', n)
end

-- long is Java's (long) cast of a finite double: truncated toward zero.
local function long(x)
  if x ~= x then return 0 end
  if x >= 0 then return floor(x) end
  return ceil(x)
end

local now
if ARGV[1] ~= '' then
  now = num(ARGV[1])
else
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end

local model, p1, p2 = ARGV[2], num(ARGV[3]), num(ARGV[4])
local model_id = 1
if model == 'warmingUp' then model_id = 2 elseif model ~= 'bursty' then fail('unknown smooth model ' .. tostring(model)) end

-- The permit storages: src/core/smooth/smooth-bursty.ts and smooth-warming-up.ts.
local function threshold_at(stable) return (0.5 * p1) / stable end

local function max_permits_at(rate, stable)
  if model_id == 1 then return p1 * rate end
  return threshold_at(stable) + (2.0 * p1) / (stable + stable * p2)
end

local function carried_permits(stored, old_max, new_max)
  if old_max == math.huge then
    if model_id == 1 then return new_max end
    return 0
  end
  if old_max == 0 then
    if model_id == 1 then return 0 end
    return new_max
  end
  return (stored * new_max) / old_max
end

local function stored_wait(S, take)
  if model_id == 1 then return 0 end
  local stable = S.interval
  local threshold = threshold_at(stable)
  local slope = (stable * p2 - stable) / (S.max - threshold)
  local above = S.stored - threshold
  local trapezoid, below = 0, take
  if above > 0 then
    local take_above = min(above, take)
    local sides = (stable + above * slope) + (stable + (above - take_above) * slope)
    trapezoid = long((take_above * sides) / 2.0)
    below = below - take_above
  end
  return trapezoid + long(stable * below)
end

local function cool_down(S)
  if model_id == 1 then return S.interval end
  return p1 / S.max
end

-- The rules: src/core/smooth/smooth-state.ts.
local function resync(S)
  if now <= S.next then return end
  S.stored = min(S.max, S.stored + (now - S.next) / cool_down(S))
  S.next = now
end

local function set_rate(S, rate)
  resync(S)
  local stable = 1000000 / rate
  local new_max = max_permits_at(rate, stable)
  S.stored = carried_permits(S.stored, S.max, new_max)
  S.max, S.interval = new_max, stable
  S.version = S.version + 1
end

-- reserve returns the wait and the start, and keeps what it found for a release.
local function reserve(S, permits)
  resync(S)
  local start = S.next
  S.undo_stored, S.undo_next = S.stored, start
  local spent = min(permits, S.stored)
  local cost = stored_wait(S, spent) + long((permits - spent) * S.interval)
  S.stored = S.stored - spent
  S.next = min(NEVER, start + cost)
  S.version = S.version + 1
  local wait = start - now
  if wait < 0 then wait = 0 end
  return wait, start
end

-- State: read, or created at the given rate as Guava's create does.
local S
local raw = redis.call('GET', key)
if raw then
  if #raw ~= 80 then fail('smooth-state ' .. key .. ' holds ' .. #raw .. ' bytes where 80 were expected') end
  local stored, max, interval, next_free, version, id, q1, q2, undo_stored, undo_next = struct.unpack('<dddddddddd', raw)
  if id ~= model_id or q1 ~= p1 or q2 ~= p2 then
    fail('smooth-model ' .. key .. ' was created as ' .. (id == 1 and 'bursty' or 'warmingUp') .. ' (' .. fmt(q1) .. ', ' .. fmt(q2) .. ') and is now asked for as ' .. model .. ' (' .. fmt(p1) .. ', ' .. fmt(p2) .. '): give every process the same options, or use another name')
  end
  S = { stored = stored, max = max, interval = interval, next = next_free, version = version, undo_stored = undo_stored, undo_next = undo_next }
else
  S = { stored = 0, max = 0, interval = 0, next = 0, version = 0, undo_stored = 0, undo_next = 0 }
  set_rate(S, num(ARGV[5]))
end

local out = { now }
local changed = not raw
for i = 7, #ARGV, 4 do
  local op = ARGV[i]
  local done, wait, start, text = 1, 0, 0, ''
  if op == 'r' then
    local permits = num(ARGV[i + 1])
    if ARGV[i + 2] ~= '' and S.next - num(ARGV[i + 2]) > now then
      done = 0
    else
      wait, start = reserve(S, permits)
      changed = true
    end
  elseif op == 's' then
    set_rate(S, num(ARGV[i + 1]))
    text = fmt(S.interval)
    changed = true
  elseif op == 'x' then
    if S.version == num(ARGV[i + 1]) and now < S.undo_next then
      S.stored, S.next = S.undo_stored, S.undo_next
      S.version = S.version + 1
      changed = true
    else
      done = 0
    end
  elseif op == 'g' then
    text = fmt(S.interval)
  else
    fail('unknown smooth operation ' .. tostring(op))
  end
  local n = #out
  out[n + 1], out[n + 2], out[n + 3], out[n + 4], out[n + 5] = done, wait, start, S.version, text
end

if changed then
  redis.call('SET', key, struct.pack('<dddddddddd', S.stored, S.max, S.interval, S.next, S.version, model_id, p1, p2, S.undo_stored, S.undo_next))
  if ARGV[6] ~= '' then
    local ahead_ms = ceil((S.next - now) / 1000)
    if ahead_ms < 0 then ahead_ms = 0 end
    redis.call('PEXPIRE', key, string.format('%.0f', ahead_ms + num(ARGV[6])))
  end
end
return out
`;

/** SMOOTH_SCRIPT is the script behind {@link redis!RedisSmoothLimiter} (`SMOOTH_LUA`) with the SHA1 that EVALSHA names it by. */
export const SMOOTH_SCRIPT: LuaScript = {
  name: 'smooth',
  source: SMOOTH_LUA,
  sha1: createHash('sha1').update(SMOOTH_LUA).digest('hex'),
};

/** SmoothAnswer is the script's answer to one operation (see {@link SMOOTH_LUA}'s reply). */
export interface SmoothAnswer {
  /** The operation took effect: a reservation made, a release done (false: a tryReserve refused, a release unsafe). */
  readonly done: boolean;
  /** The reservation's wait from the script's `now`, in whole µs (0 for other operations). */
  readonly waitMicros: number;
  /** The moment the reservation may be used, in µs on the server's clock. */
  readonly startMicros: number;
  /** The state's version after the operation: what a release of this reservation names. */
  readonly version: number;
  /** The stable interval after `s` and `g`, as the script printed it ('' for other operations). */
  readonly text: string;
}

/** FIELDS is how many reply fields each operation takes. */
const FIELDS = 5;

/** smoothAnswersOf reads the answers to `count` operations from the script's reply, or returns undefined when it is not what the script sends. */
export function smoothAnswersOf(reply: unknown, count: number): SmoothAnswer[] | undefined {
  if (!Array.isArray(reply) || reply.length !== 1 + FIELDS * count) return undefined;
  const answers: SmoothAnswer[] = new Array<SmoothAnswer>(count);
  for (let i = 1, k = 0; i < reply.length; i += FIELDS, k++) {
    const done = integerOf(reply[i]);
    const waitMicros = integerOf(reply[i + 1]);
    const startMicros = integerOf(reply[i + 2]);
    const version = integerOf(reply[i + 3]);
    const text = textOf(reply[i + 4]);
    if ((done !== 0 && done !== 1) || waitMicros === undefined || waitMicros < 0 || startMicros === undefined)
      return undefined;
    if (version === undefined || text === undefined) return undefined;
    answers[k] = { done: done === 1, waitMicros, startMicros, version, text };
  }
  return answers;
}
