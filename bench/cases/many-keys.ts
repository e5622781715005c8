/**
 * Case child: 1,000,000 distinct keys, all held. Prints one JSON line ({@link ManyKeysResult}).
 *
 * 1. Baseline: heap after a full GC, the library loaded but no store built and no key made.
 * 2. Fill: build the store, make one decision on each of n fresh keys, each key string created
 *    just before its call and not kept by the bench (so a key string counts only if the store
 *    keeps it). Full GC, measure again: bytes/key = (Δ heapUsed + Δ external) / n.
 * 3. Updates: only now build an array of the same n keys in a random order; one untimed pass to
 *    warm up, then timed passes (median), each after a GC.
 *
 *   node --conditions=floodgate-source --expose-gc --import tsx bench/cases/many-keys.ts \
 *     --subject floodgate --path sync --keys 1000000 --rounds 5
 */

import { caseArgs, numberArg, printResult, runCase } from '../support/child-io.js';
import { shuffledKeys } from '../support/keys.js';
import { fullGc, heapFigures } from '../support/memory.js';
import { loadSubject } from '../subjects/index.js';
import { summarize } from '../support/timing.js';
import type { ManyKeysResult, Memory, Path } from '../support/types.js';

async function settle<T>(value: T | Promise<T>): Promise<T> {
  return value instanceof Promise ? await value : value;
}

runCase(async () => {
  const args = caseArgs(['subject', 'path', 'keys', 'rounds']);
  const path = args['path'] as Path;
  if (path !== 'sync' && path !== 'promise') throw new Error(`--path must be sync or promise, got ${path}`);
  const n = Math.floor(numberArg(args, 'keys'));
  const rounds = Math.floor(numberArg(args, 'rounds'));
  const subject = await loadSubject(args['subject']!);
  const build = subject.manyKeys[path];
  if (build === undefined) throw new Error(`${subject.library} has no many-keys case on the ${path} path`);

  await fullGc();
  const base = heapFigures();

  const run = build(n);
  const t0 = performance.now();
  const filled = await settle(run.fill(n));
  const fillMs = performance.now() - t0;

  await fullGc();
  const after = heapFigures();
  const sizeAfterFill = run.size() ?? null;
  const heap = after.heapUsed - base.heapUsed;
  const external = after.external - base.external;
  const memory: Memory = {
    keys: n,
    bytesPerKey: (heap + external) / n,
    heapBytesPerKey: heap / n,
    externalBytesPerKey: external / n,
    arrayBufferBytesPerKey: (after.arrayBuffers - base.arrayBuffers) / n,
  };

  const keys = shuffledKeys(n);
  await settle(run.update(keys));
  const samples: number[] = [];
  let admitted = 0;
  for (let r = 0; r < rounds; r++) {
    globalThis.gc?.();
    const start = performance.now();
    admitted += await settle(run.update(keys));
    samples.push((n / (performance.now() - start)) * 1000);
  }

  const result: ManyKeysResult = {
    case: 'many-keys',
    subject: args['subject']!,
    library: subject.library,
    path,
    note: subject.note,
    keys: n,
    fill: { opsPerSec: (n / fillMs) * 1000, admitted: filled },
    memory,
    update: summarize(samples, n, admitted),
    sizeAfterFill,
    sizeAtEnd: run.size() ?? null,
  };
  printResult(result);
});
