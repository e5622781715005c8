import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  FloodgateError,
  type Algorithm,
  type Decision,
  type FloodgateErrorCode,
  type PolicyStore,
} from '../../src/index.js';
import { assertWellFormed } from '../support/decisions.js';
import { bucketGroups } from './tables/buckets.js';
import { fixedWindowGroup } from './tables/fixed-window.js';
import { gcraGroup } from './tables/gcra.js';
import { commonGroups } from './tables/common.js';
import { slidingLogGroup } from './tables/sliding-log.js';
import { subWindowGroup } from './tables/sub-window.js';
import { weightedGroup } from './tables/weighted.js';

/**
 * Step is one call in a conformance table: at `atMs` (plus the run's base time), call `op` on
 * `key`; a consume or peek answers a decision of which the fields in `expect` must match exactly,
 * and a step with `throws` must fail with a {@link FloodgateError} of that code.
 */
export interface Step {
  readonly atMs: number;
  readonly op: 'consume' | 'peek' | 'refund' | 'reset';
  readonly key: string;
  /** The request's cost; 1 when left out (refund needs one). */
  readonly cost?: number;
  readonly expect?: Partial<Decision>;
  readonly throws?: FloodgateErrorCode;
}

/** Table is one scenario: a fresh store for `algorithm()`, then the steps in order. */
export interface Table {
  readonly name: string;
  readonly algorithm: () => Algorithm;
  readonly steps: readonly Step[];
}

/** Group is the tables of one algorithm (or of every algorithm, for the common ones). */
export interface Group {
  readonly name: string;
  readonly tables: readonly Table[];
}

/** MakeStore returns a store holding no keys for `algorithm`, synchronous or not. */
export type MakeStore = (algorithm: Algorithm) => PolicyStore | Promise<PolicyStore>;

export interface ConformanceOptions {
  /**
   * baseMs is added to every step's time. It must be a multiple of every window in the tables
   * (a multiple of 60 000 will do), so that aligned windows stay aligned. Default 0.
   */
  readonly baseMs?: number;
}

/** conformanceGroups returns every table, grouped by algorithm. */
export function conformanceGroups(): Group[] {
  return [
    ...bucketGroups(),
    fixedWindowGroup(),
    slidingLogGroup(),
    weightedGroup(),
    subWindowGroup(),
    gcraGroup(),
    ...commonGroups(),
  ];
}

/**
 * runConformance registers one test per table, each against a new store from `makeStore`. Every
 * store call is awaited, so asynchronous stores (Redis) run the same tables. Keys are prefixed per
 * table, so a store shared between tables (one Redis database) still sees fresh keys.
 */
export function runConformance(name: string, makeStore: MakeStore, options: ConformanceOptions = {}): void {
  const baseMs = options.baseMs ?? 0;
  let tableNo = 0;
  describe(`conformance: ${name}${baseMs === 0 ? '' : ` (times from ${baseMs})`}`, () => {
    for (const group of conformanceGroups()) {
      describe(group.name, () => {
        for (const table of group.tables) {
          const prefix = `t${++tableNo}:`;
          test(table.name, async () => {
            const algorithm = table.algorithm();
            const store = await makeStore(algorithm);
            await runSteps(store, algorithm, table.steps, { baseMs, prefix });
          });
        }
      });
    }
  });
}

/** runSteps plays `steps` against `store`, checking each answer; also used by other test files. */
export async function runSteps(
  store: PolicyStore,
  algorithm: Algorithm,
  steps: readonly Step[],
  { baseMs = 0, prefix = '' }: { baseMs?: number; prefix?: string } = {},
): Promise<void> {
  for (const [index, step] of steps.entries()) {
    const where = `step ${index + 1}: ${step.op} ${step.key} cost ${step.cost ?? 1} at ${step.atMs}`;
    const key = prefix + step.key;
    const nowMs = baseMs + step.atMs;
    const cost = step.cost ?? 1;
    const call = async (): Promise<Decision | void> => {
      switch (step.op) {
        case 'consume':
          return store.consume(key, cost, nowMs);
        case 'peek':
          return store.peek(key, cost, nowMs);
        case 'refund':
          return store.refund(key, cost, nowMs);
        case 'reset':
          return store.reset(key);
      }
    };
    if (step.throws !== undefined) {
      await assert.rejects(call, (e: unknown) => {
        assert.ok(e instanceof FloodgateError, `${where}: expected a FloodgateError, got ${String(e)}`);
        assert.equal(e.code, step.throws, where);
        return true;
      });
      continue;
    }
    const answer = await call();
    if (step.op === 'refund' || step.op === 'reset') {
      assert.equal(answer, undefined, `${where}: ${step.op} answers nothing`);
      continue;
    }
    assert.ok(answer !== undefined, `${where}: expected a decision`);
    assertWellFormed(answer, algorithm.limit, where);
    if (step.expect !== undefined) {
      const picked = Object.fromEntries(Object.keys(step.expect).map((k) => [k, answer[k as keyof Decision]]));
      assert.deepEqual(picked, step.expect, `${where}: got ${JSON.stringify(answer)}`);
    }
  }
}
