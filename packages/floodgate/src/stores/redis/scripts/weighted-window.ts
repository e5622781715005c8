import { WEIGHTED_WINDOW } from '../../../core/algorithms/weighted-window.js';
import type { LuaRule } from './rule.js';

/**
 * WEIGHTED_WINDOW_LUA is `src/core/algorithms/weighted-window.ts` (the sliding window counter's
 * estimating form) in Lua, step for step. Params: limit, windowMs.
 * Cells: [0] start of the current window (-Infinity: none), [1] previous window's count, [2] current's.
 */
export const WEIGHTED_WINDOW_LUA = String.raw`
ALGORITHMS['weighted-window'] = function(p)
  local limit, window_ms = p[1], p[2]
  local slack = count_slack(limit)
  local START, PREV, CURR = 0, 1, 2
  local A = { width = 3, limit = limit }

  function A.init(c)
    c[START] = -INF
    c[PREV] = 0
    c[CURR] = 0
  end

  -- The windows rolled forward to now, and the estimate. A clock behind the start counts prev in full.
  local function view(c, now)
    local recorded = c[START]
    local start = max(floor(now / window_ms) * window_ms, recorded)
    local prev, curr = 0, 0
    if start == recorded then
      prev, curr = c[PREV], c[CURR]
    elseif start == recorded + window_ms then
      prev = c[CURR]
    end
    local covered = 1 - max(0, now - start) / window_ms
    return start, prev, curr, prev * covered + curr
  end

  local function retry_after_ms(start, prev, curr, now, cost)
    if curr + cost <= limit + slack then
      return start + window_ms * (1 - (limit - curr - cost) / prev) - now
    end
    return start + window_ms + window_ms * (1 - (limit - cost) / curr) - now
  end

  local function answer(c, now, cost)
    local start, prev, curr, estimate = view(c, now)
    local allowed = estimate + cost <= limit + slack
    local after, remaining, retry_ms = curr, limit - estimate, 0
    if allowed then
      after, remaining = curr + cost, limit - (estimate + cost)
    else
      retry_ms = retry_after_ms(start, prev, curr, now, cost)
    end
    local reset_ms = 0
    if after > 0 then reset_ms = start + 2 * window_ms - now
    elseif prev > 0 then reset_ms = start + window_ms - now end
    return decision(allowed, remaining, retry_ms, reset_ms), start, prev, curr
  end

  local function store(c, start, prev, curr)
    c[START] = start
    c[PREV] = prev
    c[CURR] = curr
  end

  function A.consume(c, now, cost)
    local d, start, prev, curr = answer(c, now, cost)
    if d.allowed then store(c, start, prev, curr + cost) end
    return d
  end

  function A.peek(c, now, cost)
    return (answer(c, now, cost))
  end

  function A.refund(c, now, cost)
    local start, prev, curr = view(c, now)
    store(c, start, prev, max(0, curr - cost))
  end

  function A.rest_at(c)
    local start = c[START]
    if c[CURR] > 0 then return start + 2 * window_ms end
    if c[PREV] > 0 then return start + window_ms end
    return -INF
  end

  return A
end
`;

/** WEIGHTED_WINDOW_RULE runs weighted window policies with WEIGHTED_WINDOW_LUA. */
export const WEIGHTED_WINDOW_RULE: LuaRule = {
  module: 'weighted-window',
  source: WEIGHTED_WINDOW_LUA,
  runs: [{ kind: WEIGHTED_WINDOW, registered: 'weighted-window', params: ['limit', 'windowMs'] }],
};
