import { SUB_WINDOW_COUNTER } from '../../../core/algorithms/sub-window-counter.js';
import type { LuaRule } from './rule.js';

/**
 * SUB_WINDOW_COUNTER_LUA is `src/core/algorithms/sub-window-counter.ts` (the sliding window
 * counter cut into sub-windows) in Lua, step for step. Params: limit, windowMs, subWindows.
 * Cells: [0] number of the newest recorded sub-window (-Infinity: none), [1 .. 1 + n) counts,
 * sub-window k at 1 + (k mod n).
 */
export const SUB_WINDOW_COUNTER_LUA = String.raw`
ALGORITHMS['sub-window-counter'] = function(p)
  local limit, window_ms, n = p[1], p[2], p[3]
  local slack = count_slack(limit)
  local sub_ms = window_ms / n
  local NEWEST, COUNTS = 0, 1
  local A = { width = COUNTS + n, limit = limit }

  -- Lua's % is never negative for a positive n, as the TS ring() makes it.
  local function ring(k) return k % n end

  function A.init(c)
    c[NEWEST] = -INF
  end

  local function current_of(c, now)
    return max(floor(now / sub_ms), c[NEWEST])
  end

  local function count_of(c, k, current)
    local newest = c[NEWEST]
    if k > newest or k <= newest - n or k <= current - n then return 0 end
    return c[COUNTS + ring(k)]
  end

  local function total(c, current)
    local sum = 0
    for k = current - n + 1, current do sum = sum + count_of(c, k, current) end
    return sum
  end

  local function answer(c, now, cost)
    local current = current_of(c, now)
    local counted = total(c, current)
    local allowed = counted + cost <= limit + slack
    local retry_ms, newest, freed = 0, -INF, 0
    if allowed and cost > 0 then newest = current end
    -- Walk from the oldest sub-window: when it leaves, its count is freed.
    for k = current - n + 1, current do
      local count = count_of(c, k, current)
      if count > 0 then newest = max(newest, k) end
      freed = freed + count
      if not allowed and retry_ms == 0 and counted - freed + cost <= limit + slack then
        retry_ms = (k + n) * sub_ms - now
      end
    end
    local after = counted
    if allowed then after = counted + cost end
    local reset_ms = 0
    if after > 0 then reset_ms = (newest + n) * sub_ms - now end
    return decision(allowed, limit - after, retry_ms, reset_ms)
  end

  -- Rolls the recorded sub-windows forward to current, clearing those that left the window.
  local function roll(c, current)
    local newest = c[NEWEST]
    if current <= newest then return end
    for k = max(newest + 1, current - n + 1), current do c[COUNTS + ring(k)] = 0 end
    c[NEWEST] = current
  end

  function A.consume(c, now, cost)
    local d = answer(c, now, cost)
    if d.allowed and cost > 0 then
      local current = current_of(c, now)
      roll(c, current)
      local i = COUNTS + ring(current)
      c[i] = c[i] + cost
    end
    return d
  end

  function A.peek(c, now, cost)
    return answer(c, now, cost)
  end

  function A.refund(c, now, cost)
    local current = current_of(c, now)
    roll(c, current)
    local left = cost
    local k = current
    -- Newest first: the charge being refunded is most likely there.
    while k > current - n and left > 0 do
      local i = COUNTS + ring(k)
      local take = min(c[i], left)
      c[i] = c[i] - take
      left = left - take
      k = k - 1
    end
  end

  function A.rest_at(c)
    local newest = c[NEWEST]
    if newest == -INF then return -INF end
    for k = newest, newest - n + 1, -1 do
      if c[COUNTS + ring(k)] > 0 then return (k + n) * sub_ms end
    end
    return -INF
  end

  return A
end
`;

/** SUB_WINDOW_COUNTER_RULE runs sub window counter policies with SUB_WINDOW_COUNTER_LUA. */
export const SUB_WINDOW_COUNTER_RULE: LuaRule = {
  module: 'sub-window-counter',
  source: SUB_WINDOW_COUNTER_LUA,
  runs: [{ kind: SUB_WINDOW_COUNTER, registered: 'sub-window-counter', params: ['limit', 'windowMs', 'subWindows'] }],
};
