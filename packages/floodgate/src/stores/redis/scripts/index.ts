import { createHash } from 'node:crypto';
import type { Algorithm } from '../../../core/algorithm.js';
import { FloodgateError } from '../../../core/errors.js';
import { BATCH_LUA, CONSUME_ALL_LUA, DECIDE_LUA } from './drivers.js';
import { FIXED_WINDOW_LUA } from './fixed-window.js';
import { GCRA_LUA } from './gcra.js';
import { PREAMBLE_LUA } from './preamble.js';
import { SLIDING_WINDOW_LOG_LUA } from './sliding-window-log.js';
import { SUB_WINDOW_COUNTER_LUA } from './sub-window-counter.js';
import { TOKEN_BUCKET_LUA } from './token-bucket.js';
import { WEIGHTED_WINDOW_LUA } from './weighted-window.js';

/** LuaScript is a script's source and the SHA1 that EVALSHA names it by. */
export interface LuaScript {
  readonly name: string;
  readonly source: string;
  readonly sha1: string;
}

/** LuaModule names the Lua rule of an algorithm (the token and leaky buckets share one). */
export type LuaModule = 'token-bucket' | 'fixed-window' | 'weighted-window' | 'sub-window-counter' | 'sliding-window-log' | 'gcra';

const MODULES: Readonly<Record<LuaModule, string>> = {
  'token-bucket': TOKEN_BUCKET_LUA,
  'fixed-window': FIXED_WINDOW_LUA,
  'weighted-window': WEIGHTED_WINDOW_LUA,
  'sub-window-counter': SUB_WINDOW_COUNTER_LUA,
  'sliding-window-log': SLIDING_WINDOW_LOG_LUA,
  gcra: GCRA_LUA,
};

function script(name: string, source: string): LuaScript {
  return { name, source, sha1: createHash('sha1').update(source).digest('hex') };
}

/** DECIDE_SCRIPTS are the per-algorithm scripts: preamble, the algorithm's rule, the one-key driver. */
export const DECIDE_SCRIPTS: Readonly<Record<LuaModule, LuaScript>> = Object.fromEntries(
  Object.entries(MODULES).map(([name, lua]) => [name, script(name, PREAMBLE_LUA + lua + DECIDE_LUA)]),
) as Record<LuaModule, LuaScript>;

/** CONSUME_ALL_SCRIPT is the all-or-nothing script: preamble, every rule, the many-key driver. */
export const CONSUME_ALL_SCRIPT: LuaScript = script('consume-all', PREAMBLE_LUA + Object.values(MODULES).join('') + CONSUME_ALL_LUA);

/** BATCH_SCRIPT runs several independent decisions in one call: preamble, every rule, the batch driver. */
export const BATCH_SCRIPT: LuaScript = script('batch', PREAMBLE_LUA + Object.values(MODULES).join('') + BATCH_LUA);

/** LuaPolicy is an algorithm as the scripts take it: the Lua registry name and the params in order. */
export interface LuaPolicy {
  readonly module: LuaModule;
  /** The name the Lua registry knows (`leaky-bucket` runs the token bucket's rule). */
  readonly registered: string;
  readonly params: readonly number[];
}

/**
 * luaPolicyOf returns how the scripts run `algorithm`, reading its `name` and `params`.
 *
 * @throws FloodgateError `INVALID_OPTION` for an algorithm the Redis scripts do not implement.
 */
export function luaPolicyOf(algorithm: Algorithm): LuaPolicy {
  const p = algorithm.params;
  const get = (name: string): number => {
    const value = p[name];
    if (typeof value !== 'number') throw unsupported(algorithm, `its params lack ${name}`);
    return value;
  };
  switch (algorithm.name) {
    case 'token-bucket':
      return { module: 'token-bucket', registered: 'token-bucket', params: [get('capacity'), get('refillPerSecond')] };
    case 'leaky-bucket':
      return { module: 'token-bucket', registered: 'leaky-bucket', params: [get('capacity'), get('leakPerSecond')] };
    case 'fixed-window':
      return { module: 'fixed-window', registered: 'fixed-window', params: [get('limit'), get('windowMs')] };
    case 'sliding-window-log':
      return { module: 'sliding-window-log', registered: 'sliding-window-log', params: [get('limit'), get('windowMs')] };
    case 'sliding-window-counter':
      if (p.subWindows === undefined) return { module: 'weighted-window', registered: 'weighted-window', params: [get('limit'), get('windowMs')] };
      return { module: 'sub-window-counter', registered: 'sub-window-counter', params: [get('limit'), get('windowMs'), get('subWindows')] };
    case 'gcra':
      return { module: 'gcra', registered: 'gcra', params: [get('rate'), get('periodMs'), get('maxBurst')] };
    default:
      throw unsupported(algorithm, 'the Redis store has no script for it');
  }
}

function unsupported(algorithm: Algorithm, why: string): FloodgateError {
  return new FloodgateError(
    'INVALID_OPTION',
    `RedisStore cannot run the algorithm ${JSON.stringify(algorithm.name)}: ${why}; use tokenBucket, leakyBucket, fixedWindow, slidingWindowLog, slidingWindowCounter or gcra`,
    'policy',
  );
}
