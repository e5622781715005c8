/** LuaModule names the Lua rule of an algorithm (the token and leaky buckets share one). */
export type LuaModule =
  'token-bucket' | 'fixed-window' | 'weighted-window' | 'sub-window-counter' | 'sliding-window-log' | 'gcra';

/**
 * LuaRun says how the scripts run the algorithms of one `kind` (see `Algorithm.kind`): the name
 * the Lua registry knows the rule by, and which of the algorithm's `params` it takes, in order.
 */
export interface LuaRun {
  readonly kind: symbol;
  readonly registered: string;
  readonly params: readonly string[];
}

/** LuaRule is one Lua rule (a file of `scripts/`), its source, and the algorithm kinds it runs. */
export interface LuaRule {
  readonly module: LuaModule;
  readonly source: string;
  readonly runs: readonly LuaRun[];
}
