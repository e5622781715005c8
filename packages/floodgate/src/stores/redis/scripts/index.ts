import { createHash } from 'node:crypto';
import type { Algorithm } from '../../../core/algorithm.js';
import { FloodgateError } from '../../../core/errors.js';
import { CENSUS_LUA } from './census.js';
import { BATCH_LUA, CONSUME_ALL_LUA, DECIDE_LUA } from './drivers.js';
import { FIXED_WINDOW_RULE } from './fixed-window.js';
import { GCRA_RULE } from './gcra.js';
import { PREAMBLE_LUA } from './preamble.js';
import type { LuaModule, LuaRule, LuaRun } from './rule.js';
import { SLIDING_WINDOW_LOG_RULE } from './sliding-window-log.js';
import { SUB_WINDOW_COUNTER_RULE } from './sub-window-counter.js';
import { TOKEN_BUCKET_RULE } from './token-bucket.js';
import { WEIGHTED_WINDOW_RULE } from './weighted-window.js';

export type { LuaModule, LuaRule, LuaRun } from './rule.js';

/** LuaScript is a script's source and the SHA1 that EVALSHA names it by. */
export interface LuaScript {
  readonly name: string;
  readonly source: string;
  readonly sha1: string;
}

/**
 * RULES are every Lua rule, in the order the many-rule scripts hold them. Adding a policy to the
 * Redis store is its core file (with its `kind`), its rule's file here, and one line in this list.
 */
const RULES: readonly LuaRule[] = [
  TOKEN_BUCKET_RULE,
  FIXED_WINDOW_RULE,
  WEIGHTED_WINDOW_RULE,
  SUB_WINDOW_COUNTER_RULE,
  SLIDING_WINDOW_LOG_RULE,
  GCRA_RULE,
];

/** RUNS finds how to run an algorithm by its `kind`, the registry that replaces any reading of names. */
const RUNS: ReadonlyMap<symbol, { readonly module: LuaModule; readonly run: LuaRun }> = new Map(
  RULES.flatMap((rule) => rule.runs.map((run) => [run.kind, { module: rule.module, run }] as const)),
);

const ALL_RULES_LUA = RULES.map((rule) => rule.source).join('');

function script(name: string, source: string): LuaScript {
  return { name, source, sha1: createHash('sha1').update(source).digest('hex') };
}

/** DECIDE_SCRIPTS are the per-algorithm scripts: preamble, the algorithm's rule, the one-key driver. */
export const DECIDE_SCRIPTS: Readonly<Record<LuaModule, LuaScript>> = Object.fromEntries(
  RULES.map((rule) => [rule.module, script(rule.module, PREAMBLE_LUA + rule.source + DECIDE_LUA)]),
) as Record<LuaModule, LuaScript>;

/** CONSUME_ALL_SCRIPT is the all-or-nothing script: preamble, every rule, the many-key driver. */
export const CONSUME_ALL_SCRIPT: LuaScript = script('consume-all', PREAMBLE_LUA + ALL_RULES_LUA + CONSUME_ALL_LUA);

/** BATCH_SCRIPT runs several independent decisions in one call: preamble, every rule, the batch driver. */
export const BATCH_SCRIPT: LuaScript = script('batch', PREAMBLE_LUA + ALL_RULES_LUA + BATCH_LUA);

/** CENSUS_SCRIPT counts the stores beating on one Redis (see `FleetCensus`). */
export const CENSUS_SCRIPT: LuaScript = script('census', CENSUS_LUA);

/** LuaPolicy is an algorithm as the scripts take it: the Lua registry name and the params in order. */
export interface LuaPolicy {
  readonly module: LuaModule;
  /** The name the Lua registry knows (`leaky-bucket` runs the token bucket's rule). */
  readonly registered: string;
  readonly params: readonly number[];
}

/**
 * luaPolicyOf returns how the scripts run `algorithm`: the rule registered for its `kind`, with
 * the params that rule takes, in order.
 *
 * @throws FloodgateError `INVALID_OPTION` for an algorithm the Redis scripts do not implement.
 */
export function luaPolicyOf(algorithm: Algorithm): LuaPolicy {
  const found = algorithm.kind === undefined ? undefined : RUNS.get(algorithm.kind);
  if (found === undefined) throw unsupported(algorithm, 'the Redis store has no script for its kind');
  const params = found.run.params.map((name) => {
    const value = algorithm.params[name];
    if (typeof value !== 'number') throw unsupported(algorithm, `its params lack ${name}`);
    return value;
  });
  return { module: found.module, registered: found.run.registered, params };
}

function unsupported(algorithm: Algorithm, why: string): FloodgateError {
  return new FloodgateError(
    'INVALID_OPTION',
    `RedisStore cannot run the algorithm ${JSON.stringify(algorithm.name)}: ${why}; use tokenBucket, leakyBucket, fixedWindow, slidingWindowLog, slidingWindowCounter or gcra`,
    'policy',
  );
}
