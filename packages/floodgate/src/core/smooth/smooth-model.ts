import type { PermitStorage } from './permit-storage.js';
import { burstyStorage } from './smooth-bursty.js';
import { warmingUpStorage } from './smooth-warming-up.js';

/**
 * SmoothModel names one of Guava's two smooth limiters with its fixed parameters: bursty with
 * `maxBurstSeconds` of storable permits, or warming up over `warmupMicros` (a whole number of µs)
 * with a cold factor. The rate is not part of it: it lives in the {@link SmoothState}.
 */
export type SmoothModel =
  | { readonly kind: 'bursty'; readonly maxBurstSeconds: number }
  | { readonly kind: 'warmingUp'; readonly warmupMicros: number; readonly coldFactor: number };

/** storageOf returns the arithmetic of `model`'s stored permits. */
export function storageOf(model: SmoothModel): PermitStorage {
  return model.kind === 'bursty'
    ? burstyStorage(model.maxBurstSeconds)
    : warmingUpStorage(model.warmupMicros, model.coldFactor);
}
