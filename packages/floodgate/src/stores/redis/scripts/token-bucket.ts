import { LEAKY_BUCKET, TOKEN_BUCKET } from '../../../core/algorithms/token-bucket.js';
import type { LuaRule } from './rule.js';

/**
 * TOKEN_BUCKET_LUA is `src/core/algorithms/token-bucket.ts` in Lua, step for step, registered as
 * both `token-bucket` and `leaky-bucket` (the same rule). Params: capacity, per-second rate.
 * Cells: [0] tokens available, [1] time of the last update in ms.
 */
export const TOKEN_BUCKET_LUA = String.raw`
local function continuous_bucket(p)
  local limit, per_second = p[1], p[2]
  local slack = count_slack(limit)
  local per_ms = per_second / 1000
  local ms_per_token = 1000 / per_second
  local TOKENS, UPDATED = 0, 1
  local A = { width = 2, limit = limit }

  function A.init(c, now)
    c[TOKENS] = limit
    c[UPDATED] = now
  end

  -- The effective time: never before the last update, which is never moved back.
  local function effective_ms(c, now)
    if now > c[UPDATED] then return now end
    return c[UPDATED]
  end

  local function tokens_at(c, eff)
    local elapsed = eff - c[UPDATED]
    local tokens = c[TOKENS]
    if not (elapsed > 0) then return tokens end
    return min(limit, tokens + elapsed * per_ms)
  end

  -- stalled_ms: how far the clock is behind the last update; no refill comes until it catches up.
  local function answer(tokens, cost, stalled_ms)
    if tokens + slack >= cost then
      local left = max(0, tokens - cost)
      return decision(true, left, 0, stalled_ms + (limit - left) * ms_per_token)
    end
    local retry_ms = stalled_ms + (cost - tokens - slack) * ms_per_token
    return decision(false, tokens, retry_ms, stalled_ms + (limit - tokens) * ms_per_token)
  end

  function A.consume(c, now, cost)
    local eff = effective_ms(c, now)
    local tokens = tokens_at(c, eff)
    local d = answer(tokens, cost, eff - now)
    if d.allowed then
      c[TOKENS] = max(0, tokens - cost)
      c[UPDATED] = eff
    end
    return d
  end

  function A.peek(c, now, cost)
    local eff = effective_ms(c, now)
    return answer(tokens_at(c, eff), cost, eff - now)
  end

  function A.refund(c, now, cost)
    local eff = effective_ms(c, now)
    c[TOKENS] = min(limit, tokens_at(c, eff) + cost)
    c[UPDATED] = eff
  end

  -- Books what consuming at the (whole-ms) due time would: no filling past capacity meanwhile.
  function A.reserve(c, now, cost, max_wait_ms)
    local eff = effective_ms(c, now)
    local tokens = tokens_at(c, eff)
    local wait_ms = 0
    if not (tokens + slack >= cost) then wait_ms = ceil_ms(eff - now + (cost - tokens - slack) * ms_per_token) end
    if wait_ms > max_wait_ms then return -1 end
    local refill_ms = max(0, now + wait_ms - eff)
    c[TOKENS] = min(tokens, limit - refill_ms * per_ms) - cost
    c[UPDATED] = eff
    return wait_ms
  end

  function A.rest_at(c)
    return c[UPDATED] + (limit - c[TOKENS]) / per_ms
  end

  return A
end
ALGORITHMS['token-bucket'] = continuous_bucket
ALGORITHMS['leaky-bucket'] = continuous_bucket
`;

/** TOKEN_BUCKET_RULE runs token bucket policies with TOKEN_BUCKET_LUA. */
export const TOKEN_BUCKET_RULE: LuaRule = {
  module: 'token-bucket',
  source: TOKEN_BUCKET_LUA,
  runs: [
    { kind: TOKEN_BUCKET, registered: 'token-bucket', params: ['capacity', 'refillPerSecond'] },
    { kind: LEAKY_BUCKET, registered: 'leaky-bucket', params: ['capacity', 'leakPerSecond'] },
  ],
};
