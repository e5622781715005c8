import { GCRA } from '../../../core/algorithms/gcra.js';
import type { LuaRule } from './rule.js';

/**
 * GCRA_LUA is `src/core/algorithms/gcra.ts` in Lua, step for step.
 * Params: rate, periodMs, maxBurst. Cells: [0] theoretical arrival time in ms (-Infinity: fresh).
 */
export const GCRA_LUA = String.raw`
ALGORITHMS['gcra'] = function(p)
  local rate, period_ms, max_burst = p[1], p[2], p[3]
  local limit = max_burst + 1
  local interval_ms = period_ms / rate
  local tolerance_ms = interval_ms * limit
  local TAT = 0
  local A = { width = 1, limit = limit }

  function A.init(c)
    c[TAT] = -INF
  end

  local function answer(c, now, cost)
    local tat = max(c[TAT], now)
    local new_tat = tat + interval_ms * cost
    local allow_at = new_tat - tolerance_ms
    local allowed = cost == 0 or now + TIME_EPSILON_MS >= allow_at
    local settled = tat
    if allowed then settled = new_tat end
    return decision(allowed, (now - (settled - tolerance_ms) + TIME_EPSILON_MS) / interval_ms, allow_at - TIME_EPSILON_MS - now, settled - now)
  end

  function A.consume(c, now, cost)
    local d = answer(c, now, cost)
    if d.allowed and cost > 0 then c[TAT] = max(c[TAT], now) + interval_ms * cost end
    return d
  end

  function A.peek(c, now, cost)
    return answer(c, now, cost)
  end

  function A.refund(c, now, cost)
    local tat = c[TAT]
    if tat <= now then return end
    c[TAT] = max(now, tat - interval_ms * cost)
  end

  -- Books what consuming at the (whole-ms) due time would: the TAT advances from then.
  function A.reserve(c, now, cost, max_wait_ms)
    local tat = max(c[TAT], now)
    local wait_ms = ceil_ms(tat + interval_ms * cost - tolerance_ms - TIME_EPSILON_MS - now)
    if wait_ms > max_wait_ms then return -1 end
    c[TAT] = max(tat, now + wait_ms) + interval_ms * cost
    return wait_ms
  end

  function A.rest_at(c)
    return c[TAT]
  end

  return A
end
`;

/** GCRA_RULE runs gcra policies with GCRA_LUA. */
export const GCRA_RULE: LuaRule = {
  module: 'gcra',
  source: GCRA_LUA,
  runs: [{ kind: GCRA, registered: 'gcra', params: ['rate', 'periodMs', 'maxBurst'] }],
};
