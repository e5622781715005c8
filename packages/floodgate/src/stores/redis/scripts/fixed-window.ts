import { FIXED_WINDOW } from '../../../core/algorithms/fixed-window.js';
import type { LuaRule } from './rule.js';

/**
 * FIXED_WINDOW_LUA is `src/core/algorithms/fixed-window.ts` in Lua, step for step.
 * Params: limit, windowMs. Cells: [0] start of the counted window (-Infinity: none), [1] count.
 */
export const FIXED_WINDOW_LUA = String.raw`
ALGORITHMS['fixed-window'] = function(p)
  local limit, window_ms = p[1], p[2]
  local slack = count_slack(limit)
  local START, COUNT = 0, 1
  local A = { width = 2, limit = limit }

  function A.init(c)
    c[START] = -INF
    c[COUNT] = 0
  end

  -- A clock gone back stays in the recorded window.
  local function window_at(c, now)
    return max(floor(now / window_ms) * window_ms, c[START])
  end

  local function count_in(c, start)
    if start == c[START] then return c[COUNT] end
    return 0
  end

  local function answer(count, start, now, cost)
    local allowed = count + cost <= limit + slack
    local after = count
    if allowed then after = count + cost end
    local until_end_ms = start + window_ms - now
    local reset_ms = 0
    if after > 0 then reset_ms = until_end_ms end
    return decision(allowed, limit - after, until_end_ms, reset_ms)
  end

  function A.consume(c, now, cost)
    local start = window_at(c, now)
    local count = count_in(c, start)
    local d = answer(count, start, now, cost)
    if d.allowed then
      c[START] = start
      c[COUNT] = count + cost
    end
    return d
  end

  function A.peek(c, now, cost)
    local start = window_at(c, now)
    return answer(count_in(c, start), start, now, cost)
  end

  function A.refund(c, now, cost)
    local start = window_at(c, now)
    if start ~= c[START] then return end
    c[COUNT] = max(0, c[COUNT] - cost)
  end

  function A.rest_at(c)
    if c[COUNT] > 0 then return c[START] + window_ms end
    return -INF
  end

  return A
end
`;

/** FIXED_WINDOW_RULE runs fixed window policies with FIXED_WINDOW_LUA. */
export const FIXED_WINDOW_RULE: LuaRule = {
  module: 'fixed-window',
  source: FIXED_WINDOW_LUA,
  runs: [{ kind: FIXED_WINDOW, registered: 'fixed-window', params: ['limit', 'windowMs'] }],
};
