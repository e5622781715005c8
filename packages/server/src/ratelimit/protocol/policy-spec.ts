/**
 * A policy on the wire between `RemoteStore` and the service's store endpoint: a library
 * factory's name and its options as numbers.
 */
import {
  FloodgateError,
  fixedWindow,
  gcra,
  leakyBucket,
  slidingWindowCounter,
  slidingWindowLog,
  tokenBucket,
  type Algorithm,
} from 'floodgate';

/** StoreOp is what a store request does to its key (`consumeAll`: to several keys, all or nothing). */
export type StoreOp = 'consume' | 'peek' | 'refund' | 'reset' | 'consumeAll';

/** PolicySpec names a policy on the wire: a factory's name and its options, as numbers. */
export interface PolicySpec {
  readonly algorithm: string;
  readonly params: Readonly<Record<string, number>>;
}

/** Factory is a library factory as the wire calls it: options in, a policy out. */
export type Factory = (params: never) => Algorithm;

/** FACTORIES are the library factories a policy spec may name, by the policy's name. */
export const FACTORIES: Readonly<Record<string, Factory>> = {
  'fixed-window': fixedWindow as Factory,
  'sliding-window-counter': slidingWindowCounter as Factory,
  'sliding-window-log': slidingWindowLog as Factory,
  'token-bucket': tokenBucket as Factory,
  'leaky-bucket': leakyBucket as Factory,
  gcra: gcra as Factory,
};

/** REMOTE_ALGORITHMS are the algorithm names a policy spec may give. */
export const REMOTE_ALGORITHMS: readonly string[] = Object.keys(FACTORIES);

/** policySpecOf returns the wire spec of `policy`, or throws `INVALID_OPTION` when no factory builds it. */
export function policySpecOf(policy: Algorithm): PolicySpec {
  if (!Object.hasOwn(FACTORIES, policy.name)) {
    throw new FloodgateError(
      'INVALID_OPTION',
      `RemoteStore: policy ${policy.name} cannot be sent; a remote store takes ${REMOTE_ALGORITHMS.join(', ')}`,
      'RemoteStore.policy',
    );
  }
  return { algorithm: policy.name, params: { ...policy.params } };
}
