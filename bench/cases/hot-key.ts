/**
 * Case child: one hot key, decisions per second, for one subject, path and regime.
 * Prints one JSON line ({@link HotKeyResult}).
 *
 *   node --conditions=floodgate-source --expose-gc --import tsx bench/cases/hot-key.ts \
 *     --subject floodgate --path sync --regime admit --warmup-ms 500 --rounds 5 --round-ms 250
 */

import { caseArgs, numberArg, printResult, runCase } from '../support/child-io.js';
import { loadSubject } from '../subjects/index.js';
import { measureRate } from '../support/timing.js';
import type { HotKeyResult, Path, Regime } from '../support/types.js';

runCase(async () => {
  const args = caseArgs(['subject', 'path', 'regime', 'warmup-ms', 'rounds', 'round-ms']);
  const path = args['path'] as Path;
  const regime = args['regime'] as Regime;
  if (path !== 'sync' && path !== 'promise') throw new Error(`--path must be sync or promise, got ${path}`);
  if (regime !== 'admit' && regime !== 'reject') throw new Error(`--regime must be admit or reject, got ${regime}`);

  const subject = await loadSubject(args['subject']!);
  const build = subject.hotKey[path];
  if (build === undefined) throw new Error(`${subject.library} has no ${path} path`);
  const run = build(regime);
  const rate = await measureRate(run, {
    warmupMs: numberArg(args, 'warmup-ms'),
    rounds: numberArg(args, 'rounds'),
    roundMs: numberArg(args, 'round-ms'),
  });
  const result: HotKeyResult = {
    case: 'hot-key',
    subject: args['subject']!,
    library: subject.library,
    path,
    regime,
    note: subject.note,
    rate,
  };
  printResult(result);
});
