import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  generateArrivals,
  parseScenario,
  parseTrace,
  simulate,
  SimulatorError,
  SeededRandom,
  ZipfSampler,
} from '../src/index.js';

const policies = [{ name: 'p', policy: { type: 'fixed-window', limit: 10, windowMs: 1000 } }];
const traffic = [{ type: 'constant', ratePerSecond: 10 }];
const base = { durationMs: 1000, traffic, policies };

function rejects(value: unknown, field: string, pattern: RegExp): void {
  assert.throws(
    () => parseScenario(value),
    (error: unknown) => {
      assert.ok(error instanceof SimulatorError, `a SimulatorError, got ${String(error)}`);
      assert.equal(error.code, 'INVALID_SCENARIO');
      assert.equal(error.field, field);
      assert.match(error.message, pattern);
      assert.ok(error.message.includes(field), `the message names ${field}: ${error.message}`);
      return true;
    },
  );
}

describe('bad scenarios', () => {
  it('are refused with a typed error naming the field', () => {
    rejects(null, '', /must be a mapping of fields/);
    rejects({ ...base, durationMs: undefined }, 'durationMs', /must be a number/);
    rejects({ ...base, durationMs: -5 }, 'durationMs', /at least 1/);
    rejects({ ...base, seed: 1.5 }, 'seed', /whole number/);
    rejects({ ...base, colour: 'red' }, 'colour', /not a known field/);
    rejects({ ...base, traffic: [] }, 'traffic', /at least 1/);
    rejects({ ...base, traffic: [{ type: 'flood' }] }, 'traffic[0].type', /one of 'constant'/);
    rejects(
      { ...base, traffic: [{ type: 'constant', ratePerSecond: 'fast' }] },
      'traffic[0].ratePerSecond',
      /must be a number/,
    );
    rejects(
      { ...base, traffic: [{ type: 'constant', ratePerSecond: 5, startMs: 500, endMs: 100 }] },
      'traffic[0].endMs',
      /not be before startMs/,
    );
    rejects(
      { ...base, traffic: [{ type: 'poisson', ratePerSecond: 5, keys: { count: 0 } }] },
      'traffic[0].keys.count',
      /at least 1/,
    );
    rejects({ ...base, traffic: [{ type: 'trace' }] }, 'traffic[0].rows', /required/);
    rejects({ ...base, traffic: [{ type: 'trace', rows: [{ atMs: -1 }] }] }, 'traffic[0].rows[0].atMs', /at least 0/);
    rejects(
      { ...base, policies: [{ name: 'p', policy: { type: 'fixed-window', limit: 10 } }] },
      'policies[0].policy.windowMs',
      /must be a number/,
    );
    rejects(
      { ...base, policies: [{ name: 'p', policy: { type: 'gcra', rate: 1, periodMs: 1000, maxBurst: 1, burst: 2 } }] },
      'policies[0].policy.burst',
      /not a known field/,
    );
    rejects(
      { ...base, policies: [{ name: 'p', mode: 'queue', policy: policies[0]!.policy }] },
      'policies[0].mode',
      /'refuse', 'wait'/,
    );
    rejects({ ...base, policies: [...policies, ...policies] }, 'policies[1].name', /unique/);
    rejects(
      { ...base, policies: [{ ...policies[0], maxWaitMs: 100 }] },
      'policies[0].maxWaitMs',
      /only with mode 'wait'/,
    );
    rejects(
      {
        ...base,
        policies: [{ name: 's', mode: 'wait', policy: { type: 'shaping-queue', intervalMs: 10, capacity: 5 } }],
      },
      'policies[0].mode',
      /always queues/,
    );
    rejects(
      { ...base, policies: [{ ...policies[0], distribution: { nodes: 2, skewMs: [1] } }] },
      'policies[0].distribution.skewMs',
      /one offset per node/,
    );
    rejects(
      {
        ...base,
        policies: [{ ...policies[0], distribution: { nodes: 2, outage: { startMs: 5, endMs: 1, onError: 'local' } } }],
      },
      'policies[0].distribution.outage.endMs',
      /after startMs/,
    );
    rejects(
      {
        ...base,
        policies: [
          { ...policies[0], distribution: { nodes: 2, outage: { startMs: 0, endMs: 1, onError: 'local', share: 2 } } },
        ],
      },
      'policies[0].distribution.outage.share',
      /at most 1/,
    );
    rejects({ ...base, bucketMs: 0.01 }, 'bucketMs', /more than 5000 steps/);
    rejects(
      { ...base, durationMs: 3_600_000, traffic: [traffic[0], { type: 'poisson', ratePerSecond: 10_000 }] },
      'traffic[1]',
      /about 36036000 requests, more than the 20000000/,
    );
  });

  it('report a misspelt field as unknown, with the field it likely meant', () => {
    const policy = { type: 'fixed-window', limit: 10, windowMs: 1000 };
    const lane = (p: object, extra: object = {}) => ({ ...base, policies: [{ name: 'a', policy: p, ...extra }] });
    rejects(
      lane({ type: 'fixed-window', limt: 10, windowMs: 1000 }),
      'policies[0].policy.limt',
      /did you mean limit\?/,
    );
    rejects(lane(policy, { maxWaitMS: 5 }), 'policies[0].maxWaitMS', /did you mean maxWaitMs\?/);
    rejects({ ...base, durationMS: 5, durationMs: undefined }, 'durationMS', /did you mean durationMs\?/);
    rejects({ ...base, polices: policies, policies: undefined }, 'polices', /did you mean policies\?/);
    rejects(lane(policy, { colour: 1 }), 'policies[0].colour', /not a known field here \(known: name, policy, mode/);
  });

  it("passes the library's own checks through, naming the option", async () => {
    const cases: Array<[unknown, string]> = [
      [{ type: 'sliding-window-counter', limit: 10, windowMs: 1000, subWindows: 3 }, 'policies[0].policy.subWindows'],
      [{ type: 'smooth-warming-up', permitsPerSecond: 10, warmupMs: 0.0001 }, 'policies[0].policy.warmupMs'],
      [{ type: 'sliding-window-log', limit: 1e9, windowMs: 1000 }, 'policies[0].policy.limit'],
    ];
    for (const [policy, field] of cases) {
      await assert.rejects(simulate({ ...base, policies: [{ name: 'p', policy }] }), (error: unknown) => {
        assert.ok(error instanceof SimulatorError, String(error));
        assert.equal(error.code, 'INVALID_SCENARIO');
        assert.equal(error.field, field);
        return true;
      });
    }
  });

  it('fills in defaults', () => {
    const s = parseScenario(base);
    assert.equal(s.seed, 1);
    assert.equal(s.bucketMs, 10);
    assert.deepEqual(s.policies[0], {
      name: 'p',
      policy: { type: 'fixed-window', limit: 10, windowMs: 1000 },
      mode: 'refuse',
      maxWaitMs: Infinity,
      distribution: undefined,
    });
  });
});

describe('traces', () => {
  it('read CSV with an optional header and JSON lines', () => {
    assert.deepEqual(parseTrace('atMs,key,cost\n0,alice\n\n# note\n10.5,bob,2\n20\n', 'csv', 't.csv'), [
      { atMs: 0, key: 'alice' },
      { atMs: 10.5, key: 'bob', cost: 2 },
      { atMs: 20 },
    ]);
    assert.deepEqual(parseTrace('{"atMs":1,"key":"a"}\n{"atMs":2,"cost":3}\n', 'jsonl', 't.jsonl'), [
      { atMs: 1, key: 'a' },
      { atMs: 2, cost: 3 },
    ]);
  });

  it('name the file and line of a bad row', () => {
    const cases: Array<[string, 'csv' | 'jsonl', string, RegExp]> = [
      ['0,a\nsoon,b\n', 'csv', 't.csv:2', /atMs must be a finite number/],
      ['0,a,-1\n', 'csv', 't.csv:1', /cost must be/],
      ['0,a,1,extra\n', 'csv', 't.csv:1', /4 columns/],
      ['{"atMs":1}\n{atMs:2}\n', 'jsonl', 't.jsonl:2', /not valid JSON/],
      ['{"atMs":1,"user":"x"}\n', 'jsonl', 't.jsonl:1', /unknown field "user"/],
      ['[1]\n', 'jsonl', 't.jsonl:1', /JSON object/],
    ];
    for (const [text, format, field, pattern] of cases) {
      assert.throws(
        () => parseTrace(text, format, field.split(':')[0]!),
        (error: unknown) =>
          error instanceof SimulatorError &&
          error.code === 'INVALID_TRACE' &&
          error.field === field &&
          pattern.test(error.message),
        `${JSON.stringify(text)} should fail at ${field}`,
      );
    }
  });
});

describe('traffic', () => {
  it('generates each pattern where it says', () => {
    const a = generateArrivals(
      [
        { type: 'constant', ratePerSecond: 4, startMs: 0, endMs: 1000, key: 'c', keys: undefined, cost: 1 },
        { type: 'boundary-burst', boundaryMs: 500, count: 2, gapMs: 1, key: 'b', keys: undefined, cost: 2 },
        {
          type: 'on-off',
          ratePerSecond: 10,
          onMs: 200,
          offMs: 300,
          startMs: 0,
          endMs: 1000,
          key: 'o',
          keys: undefined,
          cost: 1,
        },
      ],
      1000,
      1,
    );
    const at = (key: string) => [...a.atMs].filter((_, i) => a.keys[a.keyIds[i]!] === key);
    assert.deepEqual(at('c'), [0, 250, 500, 750]);
    assert.deepEqual(at('b'), [499, 499, 500, 500]);
    assert.deepEqual(at('o'), [0, 100, 500, 600]);
    for (let i = 1; i < a.length; i++) assert.ok(a.atMs[i]! >= a.atMs[i - 1]!, 'in time order');
  });

  it('ramps its rate linearly', () => {
    const a = generateArrivals(
      [
        {
          type: 'ramp',
          fromPerSecond: 0,
          toPerSecond: 200,
          startMs: 0,
          endMs: 2000,
          key: 'k',
          keys: undefined,
          cost: 1,
        },
      ],
      2000,
      1,
    );
    const first = [...a.atMs].filter((t) => t < 1000).length;
    assert.equal(a.length, 200, 'the area under the ramp');
    assert.equal(first, 50, 'a quarter of it in the first half');
  });

  it('draws Poisson gaps and Zipf keys from the seed alone', () => {
    const spec = {
      type: 'poisson' as const,
      ratePerSecond: 1000,
      startMs: 0,
      endMs: 10_000,
      key: 'k',
      keys: { count: 100, zipfExponent: 1, prefix: 'u' },
      cost: 1,
    };
    const a = generateArrivals([spec], 10_000, 42);
    const b = generateArrivals([spec], 10_000, 42);
    const c = generateArrivals([spec], 10_000, 43);
    assert.deepEqual(a.atMs, b.atMs);
    assert.deepEqual(a.keyIds, b.keyIds);
    assert.notDeepEqual(a.atMs, c.atMs);
    assert.ok(Math.abs(a.length - 10_000) < 400, `about 1000/s: ${a.length}`);
    const hits = new Map<string, number>();
    for (let i = 0; i < a.length; i++) hits.set(a.keys[a.keyIds[i]!]!, (hits.get(a.keys[a.keyIds[i]!]!) ?? 0) + 1);
    // Zipf with exponent 1 over 100 keys: key 0 takes 1 / H(100) ≈ 19%, key 1 half of that.
    const share0 = hits.get('u0')! / a.length;
    assert.ok(Math.abs(share0 - 0.193) < 0.02, `u0 share ${share0}`);
    assert.ok(Math.abs(hits.get('u1')! / hits.get('u0')! - 0.5) < 0.08);
  });

  it('has a generator that repeats for a seed', () => {
    const r = new SeededRandom(9);
    const s = new SeededRandom(9);
    const xs = Array.from({ length: 5 }, () => r.next());
    assert.deepEqual(
      xs,
      Array.from({ length: 5 }, () => s.next()),
    );
    assert.ok(xs.every((x) => x >= 0 && x < 1));
    assert.equal(new ZipfSampler(3, 0).sample(0.5), 1, 'uniform: the middle third');
  });
});
