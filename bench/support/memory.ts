/** Memory figures around a full garbage collection. Needs `node --expose-gc`. */

import { setImmediate as nextTurn } from 'node:timers/promises';

/** fullGc collects everything collectable: several major GCs, letting finalizers run between them. */
export async function fullGc(): Promise<void> {
  const gc = globalThis.gc;
  if (gc === undefined) throw new Error('run node with --expose-gc (npm run bench does)');
  for (let i = 0; i < 4; i++) {
    gc();
    await nextTurn();
  }
}

/** HeapFigures are the parts of `process.memoryUsage()` the bench uses, in bytes. */
export interface HeapFigures {
  readonly heapUsed: number;
  /** Native memory tied to JS objects; it includes `arrayBuffers`. */
  readonly external: number;
  readonly arrayBuffers: number;
}

/** heapFigures reads the heap now (call {@link fullGc} first for a settled figure). */
export function heapFigures(): HeapFigures {
  const { heapUsed, external, arrayBuffers } = process.memoryUsage();
  return { heapUsed, external, arrayBuffers };
}
