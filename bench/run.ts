/**
 * `npm run bench [-- --quick] [-- --keys N] [-- filter…]`: the in-memory benchmark.
 *
 * Runs every case in its own Node process (see bench/cases), one after the other, then prints one
 * table of all figures, the ratios floodgate aims at, and writes everything to
 * `.bench-out/latest.json`. Figures are printed, never asserted; the exit code is non-zero only
 * when a case could not run at all.
 */

import { mkdir, writeFile } from 'node:fs/promises';
import os from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { SubjectId } from './subjects/index.js';
import { bytes, count, mps, ratio, spread, table } from './support/format.js';
import { runChild } from './support/spawn.js';
import type { CaseResult, HotKeyResult, ManyKeysResult, Path, Regime } from './support/types.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const OUT_FILE = join(ROOT, '.bench-out', 'latest.json');

const USAGE = `usage: npm run bench [-- [--quick] [--keys N] [filter...]]

  --quick    fewer and shorter rounds (a smoke run; figures are rougher)
  --keys N   keys in the many-keys case (default 1000000)
  filter     run only cases whose id contains one of these strings, e.g. "floodgate",
             "hot-key", "many-keys", "express", "reject"; the matching hand-written Map
             cases always run too, so the ratios can be computed
`;

// ---------------------------------------------------------------------------------------------
// The plan

interface PlannedCase {
  readonly id: string;
  readonly kind: 'hot-key' | 'many-keys';
  readonly subject: SubjectId;
  readonly path: Path;
  /** Only for hot-key cases. */
  readonly regime?: Regime;
}

/** Subjects and paths of the hot-key case, in table order: the baseline, floodgate, the peers. */
const HOT_KEY_SUBJECTS: readonly (readonly [SubjectId, Path])[] = [
  ['map', 'sync'],
  ['map', 'promise'],
  ['map-decision', 'sync'],
  ['map-decision', 'promise'],
  ['floodgate', 'sync'],
  ['floodgate', 'promise'],
  ['fastify', 'sync'],
  ['limiter', 'sync'],
  ['express', 'promise'],
  ['rlf', 'promise'],
];

/** Subjects and paths of the many-keys case (@fastify/rate-limit's LRU and limiter have no store for it). */
const MANY_KEYS_SUBJECTS: readonly (readonly [SubjectId, Path])[] = [
  ['map', 'sync'],
  ['map', 'promise'],
  ['floodgate', 'sync'],
  ['floodgate', 'promise'],
  ['express', 'promise'],
  ['rlf', 'promise'],
];

const REGIMES: readonly Regime[] = ['admit', 'reject'];

function fullPlan(): PlannedCase[] {
  const plan: PlannedCase[] = [];
  for (const regime of REGIMES) {
    for (const [subject, path] of HOT_KEY_SUBJECTS) {
      plan.push({ id: `hot-key/${subject}/${path}/${regime}`, kind: 'hot-key', subject, path, regime });
    }
  }
  for (const [subject, path] of MANY_KEYS_SUBJECTS) {
    plan.push({ id: `many-keys/${subject}/${path}`, kind: 'many-keys', subject, path });
  }
  return plan;
}

/** The Map-bucket case that gives `c` its ratio. */
function baselineId(c: { kind: string; path: Path; regime?: Regime | undefined }): string {
  return c.kind === 'hot-key' ? `hot-key/map/${c.path}/${c.regime}` : `many-keys/map/${c.path}`;
}

/** selectPlan keeps the cases matching a filter, plus the Map baselines they are compared with. */
function selectPlan(filters: readonly string[]): PlannedCase[] {
  const all = fullPlan();
  if (filters.length === 0) return all;
  const wanted = new Set(all.filter((c) => filters.some((f) => c.id.includes(f))).map((c) => c.id));
  for (const c of all) {
    if (!wanted.has(c.id)) continue;
    wanted.add(baselineId(c));
    if (c.kind === 'hot-key') wanted.add(`hot-key/map-decision/${c.path}/${c.regime}`);
  }
  return all.filter((c) => wanted.has(c.id));
}

// ---------------------------------------------------------------------------------------------
// Settings

interface Settings {
  readonly quick: boolean;
  readonly hotKey: { readonly warmupMs: number; readonly rounds: number; readonly roundMs: number };
  readonly manyKeys: { readonly keys: number; readonly rounds: number };
}

function settingsFrom(quick: boolean, keys: string | undefined): Settings {
  const n = keys === undefined ? 1_000_000 : Number(keys);
  if (!(Number.isSafeInteger(n) && n > 0)) throw new Error(`--keys must be a positive whole number, got ${keys}`);
  return quick
    ? { quick, hotKey: { warmupMs: 100, rounds: 3, roundMs: 50 }, manyKeys: { keys: n, rounds: 1 } }
    : { quick, hotKey: { warmupMs: 500, rounds: 5, roundMs: 250 }, manyKeys: { keys: n, rounds: 3 } };
}

function childArgs(c: PlannedCase, s: Settings): [string, string[]] {
  if (c.kind === 'hot-key') {
    const h = s.hotKey;
    return [
      'bench/cases/hot-key.ts',
      [
        '--subject',
        c.subject,
        '--path',
        c.path,
        '--regime',
        c.regime ?? 'admit',
        '--warmup-ms',
        String(h.warmupMs),
        '--rounds',
        String(h.rounds),
        '--round-ms',
        String(h.roundMs),
      ],
    ];
  }
  const m = s.manyKeys;
  return [
    'bench/cases/many-keys.ts',
    ['--subject', c.subject, '--path', c.path, '--keys', String(m.keys), '--rounds', String(m.rounds)],
  ];
}

// ---------------------------------------------------------------------------------------------
// Report

const REGIME_LABEL: Record<Regime, string> = { admit: 'admitting', reject: 'rejecting' };

/** Results by case id, with lookups that tolerate a case missing (filtered out or failed). */
class Results {
  readonly byId = new Map<string, CaseResult>();

  hot(subject: SubjectId, path: Path, regime: Regime): HotKeyResult | undefined {
    const r = this.byId.get(`hot-key/${subject}/${path}/${regime}`);
    return r?.case === 'hot-key' ? r : undefined;
  }

  many(subject: SubjectId, path: Path): ManyKeysResult | undefined {
    const r = this.byId.get(`many-keys/${subject}/${path}`);
    return r?.case === 'many-keys' ? r : undefined;
  }
}

const div = (a: number | undefined, b: number | undefined): number | undefined =>
  a === undefined || b === undefined || b === 0 ? undefined : a / b;

/** The rows of the main table. */
function resultRows(plan: readonly PlannedCase[], results: Results): string[][] {
  const rows: string[][] = [];
  // Hot key, grouped by regime.
  for (const regime of REGIMES) {
    for (const c of plan) {
      if (c.kind !== 'hot-key' || c.regime !== regime) continue;
      const r = results.hot(c.subject, c.path, regime);
      const label = `1 key, ${REGIME_LABEL[regime]}`;
      if (r === undefined) {
        rows.push([label, c.subject, c.path, 'failed', '', '', '', '', '']);
        continue;
      }
      const base = results.hot('map', c.path, regime)?.rate.median;
      const fg = results.hot('floodgate', c.path, regime)?.rate.median;
      const expected = regime === 'admit' ? 1 : 0;
      const check =
        r.rate.admittedFraction === expected ? 'ok' : `admitted ${(r.rate.admittedFraction * 100).toFixed(1)}%!`;
      rows.push([
        label,
        r.library,
        r.path,
        mps(r.rate.median),
        spread(r.rate.min, r.rate.max, r.rate.median),
        ratio(div(r.rate.median, base)),
        ratio(div(fg, r.rate.median)),
        '',
        check,
      ]);
    }
  }
  // Many keys: the first pass (creates the keys), then the update passes.
  for (const phase of ['insert', 'update'] as const) {
    for (const c of plan) {
      if (c.kind !== 'many-keys') continue;
      const r = results.many(c.subject, c.path);
      const label = phase === 'insert' ? 'keys, first insert*' : 'keys, update';
      if (r === undefined) {
        if (phase === 'update') rows.push([label, c.subject, c.path, 'failed', '', '', '', '', '']);
        continue;
      }
      const base = results.many('map', c.path);
      const fg = results.many('floodgate', c.path);
      const labelled = `${count(r.keys)} ${label}`;
      if (phase === 'insert') {
        rows.push([
          labelled,
          r.library,
          r.path,
          mps(r.fill.opsPerSec),
          '',
          ratio(div(r.fill.opsPerSec, base?.fill.opsPerSec)),
          ratio(div(fg?.fill.opsPerSec, r.fill.opsPerSec)),
          '',
          r.fill.admitted === r.keys ? 'ok' : `admitted ${count(r.fill.admitted)}!`,
        ]);
        continue;
      }
      const held =
        r.sizeAtEnd === null
          ? 'held: not visible'
          : r.sizeAtEnd === r.keys
            ? `held ${count(r.sizeAtEnd)}`
            : `held ${count(r.sizeAtEnd)}!`;
      const admitted =
        r.update.admittedFraction === 1 ? '' : `, admitted ${(r.update.admittedFraction * 100).toFixed(1)}%!`;
      rows.push([
        labelled,
        r.library,
        r.path,
        mps(r.update.median),
        spread(r.update.min, r.update.max, r.update.median),
        ratio(div(r.update.median, base?.update.median)),
        ratio(div(fg?.update.median, r.update.median)),
        bytes(r.memory.bytesPerKey),
        held + admitted,
      ]);
    }
  }
  return rows;
}

interface Target {
  readonly target: string;
  readonly value: number | undefined;
  readonly goal: string;
  readonly met: boolean | undefined;
}

function targets(results: Results): Target[] {
  const hot = (path: Path, regime: Regime, subject: SubjectId = 'floodgate'): number | undefined =>
    results.hot(subject, path, regime)?.rate.median;
  const atLeast = (goal: number) => (v: number | undefined) => (v === undefined ? undefined : v >= goal);
  const near1 = (v: number | undefined): boolean | undefined => (v === undefined ? undefined : v >= 0.9 && v <= 1.1);
  const t = (
    target: string,
    value: number | undefined,
    goal: string,
    met: (v: number | undefined) => boolean | undefined,
  ): Target => ({
    target,
    value,
    goal,
    met: met(value),
  });

  const fgMany = results.many('floodgate', 'sync');
  const allHeld = fgMany !== undefined && fgMany.sizeAtEnd === fgMany.keys;
  const list: Target[] = [];
  // Issue 37's goals: the Promise path at 0.85x the Map bucket behind a Promise, the synchronous
  // admission at 0.9x; each also beside the same bucket answering a decision, the fair peer.
  const goals: Record<Path, Record<Regime, number>> = {
    sync: { admit: 0.9, reject: 0.8 },
    promise: { admit: 0.85, reject: 0.85 },
  };
  for (const path of ['sync', 'promise'] as const) {
    for (const regime of REGIMES) {
      const goal = goals[path][regime];
      const label = path === 'sync' ? 'sync' : 'Promise';
      list.push(
        t(
          `(a) floodgate ${label} ÷ Map ${label}, 1 key ${REGIME_LABEL[regime]}`,
          div(hot(path, regime), hot(path, regime, 'map')),
          `≥ ${goal}`,
          atLeast(goal),
        ),
        t(
          `(a) floodgate ${label} ÷ Map answering a decision, 1 key ${REGIME_LABEL[regime]}`,
          div(hot(path, regime), hot(path, regime, 'map-decision')),
          `≥ ${goal}`,
          atLeast(goal),
        ),
      );
    }
  }
  list.push(
    t(
      '(a) floodgate sync: rejecting ÷ admitting',
      div(hot('sync', 'reject'), hot('sync', 'admit')),
      '≈ 1 (0.9–1.1)',
      near1,
    ),
  );
  list.push(
    t(
      '(a) floodgate Promise: rejecting ÷ admitting',
      div(hot('promise', 'reject'), hot('promise', 'admit')),
      '≈ 1 (0.9–1.1)',
      near1,
    ),
  );
  list.push({
    target: `(b) floodgate bytes/key, ${fgMany === undefined ? '1M' : count(fgMany.keys)} keys held${fgMany !== undefined && !allHeld ? ' (NOT all held)' : ''}`,
    value: fgMany?.memory.bytesPerKey,
    goal: '≤ 64',
    met: fgMany === undefined || !allHeld ? undefined : fgMany.memory.bytesPerKey <= 64,
  });
  list.push(
    t(
      '(b) floodgate sync updates/s ÷ Map sync, many keys',
      div(fgMany?.update.median, results.many('map', 'sync')?.update.median),
      '≥ 1.5',
      atLeast(1.5),
    ),
  );
  return list;
}

function targetRows(list: readonly Target[]): string[][] {
  return list.map(({ target, value, goal, met }) => [
    target,
    value === undefined ? '—' : target.includes('bytes/key') ? value.toFixed(1) : value.toFixed(2),
    goal,
    met === undefined ? '—' : met ? 'yes' : 'NO',
  ]);
}

// ---------------------------------------------------------------------------------------------
// Main

async function main(): Promise<void> {
  const { values, positionals } = parseArgs({
    options: {
      quick: { type: 'boolean', default: false },
      keys: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
    allowPositionals: true,
  });
  if (values.help) {
    process.stdout.write(USAGE);
    return;
  }
  const settings = settingsFrom(values.quick, values.keys);
  const plan = selectPlan(positionals);
  if (plan.length === 0) throw new Error(`no case matches ${positionals.join(', ')}\n\n${USAGE}`);

  const cpu = os.cpus()[0]?.model.trim() ?? 'unknown CPU';
  const header = `node ${process.version}, ${process.platform} ${process.arch}, ${os.availableParallelism()} CPUs (${cpu})`;
  const h = settings.hotKey;
  const m = settings.manyKeys;
  process.stdout.write(
    `floodgate in-memory bench${settings.quick ? ' (--quick)' : ''}: ${header}\n` +
      `1 key: ${h.warmupMs} ms warm-up, median of ${h.rounds} rounds of ~${h.roundMs} ms; ` +
      `many keys: ${count(m.keys)} keys, median of ${m.rounds} update pass${m.rounds === 1 ? '' : 'es'}; one process per case\n\n`,
  );

  const results = new Results();
  const failures: { id: string; error: string }[] = [];
  const started = performance.now();
  for (const [i, c] of plan.entries()) {
    const [file, args] = childArgs(c, settings);
    const t0 = performance.now();
    const progress = `[${String(i + 1).padStart(String(plan.length).length)}/${plan.length}] ${c.id.padEnd(34)}`;
    try {
      const result = (await runChild(ROOT, file, args)) as CaseResult;
      results.byId.set(c.id, result);
      const rate = result.case === 'hot-key' ? result.rate.median : result.update.median;
      process.stderr.write(
        `${progress} ${mps(rate).padStart(6)} M/s  (${((performance.now() - t0) / 1000).toFixed(1)} s)\n`,
      );
    } catch (err) {
      const error = err instanceof Error ? err.message : String(err);
      failures.push({ id: c.id, error });
      process.stderr.write(`${progress} FAILED  ${error.split('\n')[0]}\n`);
    }
  }
  const totalS = (performance.now() - started) / 1000;

  const rows = resultRows(plan, results);
  const RESULT_HEADER = ['case', 'library', 'path', 'M ops/s', '±', '× Map', 'floodgate ÷ this', 'bytes/key', 'check'];
  const targetList = targets(results);
  const notes = [...new Map([...results.byId.values()].map((r) => [r.library, r.note])).entries()];

  const out = [
    '',
    table(RESULT_HEADER, rows, new Set([3, 4, 5, 6, 7])),
    '',
    '× Map: ÷ the hand-written Map bucket on the same path (sync or Promise) and regime.',
    'floodgate ÷ this: floodgate on the same path and regime ÷ this row (> 1: floodgate is faster).',
    '±: half the spread of the rounds around the median. bytes/key: (Δ heapUsed + Δ external) after a full GC.',
    '*first insert: one pass, one shot, building each key string as it goes.',
    '',
    table(['target', 'value', 'goal', 'met'], targetRows(targetList), new Set([1])),
    '',
    ...notes.map(([library, note]) => `${library}: ${note}`),
    '',
    `${plan.length} cases in ${totalS.toFixed(0)} s${failures.length > 0 ? `; ${failures.length} FAILED:` : ''}`,
    ...failures.map((f) => `  ${f.id}: ${f.error}`),
    '',
  ];
  process.stdout.write(out.join('\n'));

  await mkdir(dirname(OUT_FILE), { recursive: true });
  const json = {
    date: new Date().toISOString(),
    machine: {
      node: process.version,
      platform: process.platform,
      arch: process.arch,
      cpus: os.availableParallelism(),
      cpu,
    },
    settings,
    totalSeconds: totalS,
    results: Object.fromEntries(results.byId),
    targets: targetList,
    failures,
  };
  await writeFile(OUT_FILE, JSON.stringify(json, null, 2) + '\n');
  process.stdout.write(`written to ${relative(process.cwd(), OUT_FILE)}\n`);
  if (failures.length > 0) process.exitCode = 1;
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
  process.exitCode = 1;
});
