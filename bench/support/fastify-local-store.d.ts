// Types for @fastify/rate-limit's in-memory store, which the package ships without declarations.
declare module '@fastify/rate-limit/store/LocalStore.js' {
  /** The counter kept per key: hits in the current window and the window's remaining time. */
  export interface LocalStoreEntry {
    current: number;
    ttl: number;
    iterationStartMs: number;
  }
  export type IncrCallback = (err: Error | null, res: LocalStoreEntry) => void;
  /** A fixed-window counter per key, in an LRU of `cache` keys (default 5000). */
  export default class LocalStore {
    constructor(continueExceeding?: boolean, exponentialBackoff?: boolean, cache?: number);
    incr(key: string, cb: IncrCallback, timeWindow: number, max: number): void;
  }
}
