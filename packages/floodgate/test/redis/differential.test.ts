import fc from 'fast-check';
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Algorithm, Decision } from '../../src/index.js';
import { RedisStore, ioredisAdapter, type RedisTable } from '../../src/stores/redis/index.js';
import { build, costArb, policyArb, policyKinds, startArb, stepArb, type PolicySpec } from '../support/policies.js';
import { useRedis } from './setup.js';
import { runs } from '../support/sweep.js';

// Redis decides every request in these tests, however loaded the machine: a fixed, generous timeout
// (the adaptive default would cut a call off at 3x the recent p99, and a fallback would decide it).
const DECIDES = 5000;

// The Lua scripts against the pure core: random sequences of (time step, cost, op) on both, with
// identical decisions, reservations and states required. The model is the algorithm's own methods
// on a Float64Array plus the store's rule for forgetting: a state at rest (restAtMs <= now) is a
// fresh key, when read and when written, as Redis's TTL makes it.

const get = useRedis();

type Op = 'consume' | 'peek' | 'refund' | 'reserve' | 'reset';
interface Step {
  readonly stepMs: number;
  readonly cost: number;
  readonly op: Op;
}

class Model {
  state: Float64Array | undefined;
  constructor(readonly algorithm: Algorithm) {}

  private load(nowMs: number): { cells: Float64Array; fresh: boolean } {
    const a = this.algorithm;
    if (this.state !== undefined && a.restAtMs(this.state, 0) <= nowMs) this.state = undefined;
    if (this.state !== undefined) return { cells: this.state.slice(), fresh: false };
    const cells = new Float64Array(a.width);
    a.init(cells, 0, nowMs);
    return { cells, fresh: true };
  }

  private commit(cells: Float64Array, nowMs: number): void {
    this.state = this.algorithm.restAtMs(cells, 0) <= nowMs ? undefined : cells;
  }

  apply(op: Op, nowMs: number, cost: number): Decision | number | undefined {
    const a = this.algorithm;
    if (op === 'reset') return void (this.state = undefined);
    const { cells, fresh } = this.load(nowMs);
    switch (op) {
      case 'consume': {
        const d = a.consume(cells, 0, nowMs, cost);
        if (d.allowed) this.commit(cells, nowMs);
        return d;
      }
      case 'peek':
        return a.peek(cells, 0, nowMs, cost);
      case 'refund':
        if (!fresh) {
          a.refund(cells, 0, nowMs, cost);
          this.commit(cells, nowMs);
        }
        return undefined;
      case 'reserve': {
        const waitMs = a.reserve!(cells, 0, nowMs, cost, 500);
        if (waitMs >= 0) this.commit(cells, nowMs);
        return waitMs;
      }
    }
  }
}

async function applyRedis(
  table: RedisTable,
  op: Op,
  key: string,
  nowMs: number,
  cost: number,
): Promise<Decision | number | undefined> {
  switch (op) {
    case 'consume':
      return table.consume(key, cost, nowMs);
    case 'peek':
      return table.peek(key, cost, nowMs);
    case 'refund':
      return void (await table.refund(key, cost, nowMs));
    case 'reset':
      return void (await table.reset(key));
    case 'reserve':
      return table.reserve!(key, cost, nowMs, 500);
  }
}

/** The cells that matter: all of them, or for the sliding log its header and live entries. */
function meaningful(spec: PolicySpec, cells: Float64Array): number[] {
  if (spec.kind !== 'slidingWindowLog') return [...cells];
  const [head = 0, count = 0] = cells;
  const live = Array.from({ length: count }, (_, i) => cells[2 + ((head + i) % spec.limit)]!);
  return [head, count, ...live];
}

async function redisCells(spec: PolicySpec, redisKey: string, width: number): Promise<number[] | undefined> {
  const bytes = await get().client.getBuffer(redisKey);
  if (bytes === null) return undefined;
  const cells = new Float64Array(width);
  for (let i = 0; i * 8 + 8 <= bytes.length && i < width; i++) cells[i] = bytes.readDoubleLE(i * 8);
  return meaningful(spec, cells);
}

function stepsArb(spec: PolicySpec, reserve: boolean): fc.Arbitrary<Step[]> {
  const ops: Op[] = [
    'consume',
    'consume',
    'consume',
    'peek',
    'refund',
    ...(reserve ? (['reserve'] as const) : []),
    'reset',
  ];
  const op = fc.oneof(
    { weight: 30, arbitrary: fc.constantFrom(...ops.slice(0, -1)) },
    { weight: 1, arbitrary: fc.constant<Op>('reset') },
  );
  return fc.array(fc.record({ stepMs: stepArb(spec), cost: costArb(spec), op }), { minLength: 1, maxLength: 60 });
}

let run = 0;

describe('differential: Lua scripts against the pure core', () => {
  for (const kind of policyKinds) {
    test(kind, async () => {
      const store = new RedisStore({ timeoutMs: DECIDES, adapter: ioredisAdapter(get().client), unsafeTestTime: true });
      const arb = policyArb(kind).chain((spec) =>
        fc.tuple(fc.constant(spec), startArb, stepsArb(spec, build(spec).reserve !== undefined)),
      );
      await fc.assert(
        fc.asyncProperty(arb, async ([spec, startMs, steps]) => {
          const algorithm = build(spec);
          const table = store.bind(algorithm);
          const model = new Model(algorithm);
          const key = `diff-${++run}`;
          const redisKey = table.entryOf(key).redisKey;
          let nowMs = startMs;
          for (const [i, { stepMs, cost, op }] of steps.entries()) {
            nowMs += stepMs;
            const where = `step ${i + 1}: ${op} cost ${cost} at ${nowMs}`;
            assert.deepEqual(await applyRedis(table, op, key, nowMs, cost), model.apply(op, nowMs, cost), where);
            const expected = model.state === undefined ? undefined : meaningful(spec, model.state);
            assert.deepEqual(await redisCells(spec, redisKey, algorithm.width), expected, `${where}: state`);
          }
        }),
        { numRuns: runs(150) },
      );
    });
  }
});
