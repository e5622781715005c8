/**
 * Custom stores that fail as real backends do, for the HTTP failure tests: one rejecting with a
 * typed `STORE_ERROR`, one with a plain `Error`, one that never answers.
 */
import { FloodgateError, type PolicyStore, type Store } from '../../src/index.js';

/** FailingKind names how a custom store fails. */
export type FailingKind = 'floodgate-error' | 'plain-error' | 'never-answers';

/** failingCustomStore returns a store whose every call fails as `kind` says. */
export function failingCustomStore(kind: FailingKind): Store {
  const fail = (): Promise<never> => {
    if (kind === 'never-answers') return new Promise<never>(() => {});
    if (kind === 'floodgate-error')
      return Promise.reject(new FloodgateError('STORE_ERROR', 'custom store: backend unreachable'));
    return Promise.reject(new Error('custom store: socket hang up'));
  };
  const table: PolicyStore = { synchronous: false, consume: fail, peek: fail, refund: fail, reset: fail };
  return { bind: () => table };
}
