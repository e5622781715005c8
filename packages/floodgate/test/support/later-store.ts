import { FloodgateError, MemoryStore, type Algorithm, type PolicyStore, type Store } from '../../src/index.js';

/**
 * laterStore returns an asynchronous store over a memory store: each answer comes a microtask later,
 * as from a remote store. When `down`, every call rejects with `STORE_ERROR`, as a store that is away.
 */
export function laterStore(down = false): Store {
  const inner = new MemoryStore();
  return {
    bind(algorithm: Algorithm): PolicyStore {
      const table = inner.bind(algorithm);
      const later = <T>(run: () => T): Promise<T> =>
        down ? Promise.reject(new FloodgateError('STORE_ERROR', 'down')) : Promise.resolve().then(run);
      return {
        synchronous: false,
        consume: (k, c, t) => later(() => table.consume(k, c, t)),
        peek: (k, c, t) => later(() => table.peek(k, c, t)),
        refund: (k, c, t) => later(() => table.refund(k, c, t)),
        reset: (k) => later(() => table.reset(k)),
      };
    },
  };
}
