import { SLIDING_WINDOW_LOG } from '../../../core/algorithms/sliding-window-log.js';
import type { LuaRule } from './rule.js';

/**
 * SLIDING_WINDOW_LOG_LUA is `src/core/algorithms/sliding-window-log.ts` in Lua, step for step.
 * Params: limit, windowMs. Cells: [0] ring index of the oldest entry, [1] entries held,
 * [2 .. 2 + limit) entry times in ms, oldest first. Its state is `lazy`: cells are read one by one
 * (a binary search reads about log2(limit) of them) and only the changed runs are written.
 */
export const SLIDING_WINDOW_LOG_LUA = String.raw`
ALGORITHMS['sliding-window-log'] = function(p)
  local limit, window_ms = p[1], p[2]
  local HEAD, COUNT, RING = 0, 1, 2
  local A = { width = RING + limit, limit = limit, lazy = true }

  function A.init(c)
    c[HEAD] = 0
    c[COUNT] = 0
  end

  local function entry(c, i)
    return c[RING + ((c[HEAD] + i) % limit)]
  end

  -- How many of the oldest entries have left the window (entries are sorted: binary search).
  local function expired(c, now)
    local lo, hi = 0, c[COUNT]
    while lo < hi do
      local mid = floor((lo + hi) / 2)
      if entry(c, mid) + window_ms <= now then lo = mid + 1 else hi = mid end
    end
    return lo
  end

  local function answer(c, now, cost)
    local count = c[COUNT]
    local dead = expired(c, now)
    local live = count - dead
    local allowed = live + cost <= limit
    local after, blocker = live, 0
    if allowed then after = live + cost else blocker = entry(c, dead + live + cost - limit - 1) end
    local newest = -INF
    if count > 0 then newest = entry(c, count - 1) end
    local newest_after = newest
    if allowed and cost > 0 then newest_after = max(now, newest) end
    local reset_ms = 0
    if after > 0 then reset_ms = newest_after + window_ms - now end
    return decision(allowed, limit - after, blocker + window_ms - now, reset_ms)
  end

  local function append(c, now, cost)
    local dead = expired(c, now)
    local count = c[COUNT] - dead
    local head = (c[HEAD] + dead) % limit
    local newest = -INF
    if count > 0 then newest = c[RING + ((head + count - 1) % limit)] end
    -- An entry recorded while the clock is behind the newest takes the newest time.
    local stamp = max(now, newest)
    for _ = 1, cost do
      c[RING + ((head + count) % limit)] = stamp
      count = count + 1
    end
    c[HEAD] = head
    c[COUNT] = count
  end

  function A.consume(c, now, cost)
    local d = answer(c, now, cost)
    if d.allowed and cost > 0 then append(c, now, cost) end
    return d
  end

  function A.peek(c, now, cost)
    return answer(c, now, cost)
  end

  function A.refund(c, _, cost)
    c[COUNT] = max(0, c[COUNT] - floor(cost))
  end

  function A.rest_at(c)
    local count = c[COUNT]
    if count > 0 then return entry(c, count - 1) + window_ms end
    return -INF
  end

  return A
end
`;

/** SLIDING_WINDOW_LOG_RULE runs sliding window log policies with SLIDING_WINDOW_LOG_LUA. */
export const SLIDING_WINDOW_LOG_RULE: LuaRule = {
  module: 'sliding-window-log',
  source: SLIDING_WINDOW_LOG_LUA,
  runs: [{ kind: SLIDING_WINDOW_LOG, registered: 'sliding-window-log', params: ['limit', 'windowMs'] }],
};
