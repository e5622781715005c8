/**
 * envoyproxy/ratelimit's answers, case by case, on the behaviour its tests specify: matching
 * (value, wildcards anywhere and their order, the key alone, depth), limits of 0, unlimited,
 * replaces (an unlimited limit's too), shadow and quota mode, share_threshold, hits_addend,
 * overrides, unknown domains, and the metric names. Our own cases, on the accepted fixtures of
 * envoy-configs.test.ts; each step's answer is Go's unless the case says where we differ.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';
import { ManualClock, MemoryStore } from 'floodgate';
import {
  createRateLimitService,
  MAX_UINT32,
  parseDecisionRequest,
  type DescriptorOutcome,
  type RateLimitService,
} from '../../src/ratelimit/index.js';
import { domainsOf, fixturePath, START_MS } from './support.js';

type Entries = Array<[string, string]>;

interface Step {
  /** Descriptors of one request, each a list of entries. */
  readonly ask: Entries[];
  readonly hits?: number;
  readonly overall: 'OK' | 'OVER_LIMIT';
  /** Per descriptor: code, limit_remaining, and requests_per_unit of current_limit (null: none). */
  readonly answers: Array<[code: 'OK' | 'OVER_LIMIT', remaining: number, limit: number | null]>;
}

interface Case {
  readonly name: string;
  readonly fixture: string;
  readonly domain?: string;
  readonly steps: readonly Step[];
}

const ok = (remaining: number, limit: number | null): Step['answers'][number] => ['OK', remaining, limit];
const over = (limit: number | null, remaining = 0): Step['answers'][number] => ['OVER_LIMIT', remaining, limit];
const none = ok(0, null);
const times = (n: number, step: (i: number) => Step): Step[] => Array.from({ length: n }, (_, i) => step(i));

const CASES: readonly Case[] = [
  {
    name: 'a value-specific nested limit counts down to its limit, then refuses',
    fixture: 'nested-units.yaml',
    steps: [
      ...times(5, (i) => ({
        ask: [
          [
            ['tenant', 'acme'],
            ['user', 'bob'],
          ],
        ],
        overall: 'OK',
        answers: [ok(4 - i, 5)],
      })),
      {
        ask: [
          [
            ['tenant', 'acme'],
            ['user', 'bob'],
          ],
        ],
        overall: 'OVER_LIMIT',
        answers: [over(5)],
      },
      {
        ask: [
          [
            ['tenant', 'acme'],
            ['user', 'eve'],
          ],
        ],
        overall: 'OK',
        answers: [ok(4, 5)],
      },
    ],
  },
  {
    name: 'the key alone matches other values; a matched node without a limit does not fall back to it',
    fixture: 'nested-units.yaml',
    steps: [
      { ask: [[['tenant', 'globex']]], overall: 'OK', answers: [ok(99, 100)] },
      { ask: [[['tenant', 'acme']]], overall: 'OK', answers: [none] },
      {
        ask: [
          [
            ['tenant', 'globex'],
            ['route', '/upload'],
          ],
        ],
        overall: 'OK',
        answers: [ok(19, 20)],
      },
    ],
  },
  {
    name: 'a limit applies only at the depth of the last entry',
    fixture: 'nested-units.yaml',
    steps: [
      {
        ask: [
          [
            ['tenant', 'acme'],
            ['user', 'bob'],
            ['extra', 'x'],
          ],
        ],
        overall: 'OK',
        answers: [none],
      },
      {
        ask: [
          [
            ['tenant', 'globex'],
            ['route', '/other'],
          ],
        ],
        overall: 'OK',
        answers: [none],
      },
      { ask: [[['unknown', 'x']]], overall: 'OK', answers: [none] },
    ],
  },
  {
    name: 'a limit of 0 (or none given) refuses every request',
    fixture: 'zero-and-missing.yaml',
    steps: [
      { ask: [[['blocked', 'a']]], overall: 'OVER_LIMIT', answers: [over(0)] },
      { ask: [[['unset', 'a']]], overall: 'OVER_LIMIT', answers: [over(0)] },
    ],
  },
  {
    name: 'shadow mode: over its limit, the descriptor and the request answer OK',
    fixture: 'shadow.yaml',
    steps: [
      ...times(2, (i) => ({ ask: [[['trial', 'x']]], overall: 'OK', answers: [ok(1 - i, 2)] })),
      { ask: [[['trial', 'x']]], overall: 'OK', answers: [ok(0, 2)] },
    ],
  },
  {
    name: 'shadow mode beside an enforced limit: the enforced one decides the request',
    fixture: 'shadow.yaml',
    steps: [
      { ask: [[['trial', 'y']], [['enforced', 'y']]], overall: 'OK', answers: [ok(1, 2), ok(0, 1)] },
      // Here the request is refused, and (our documented difference) the shadow limit is not charged.
      { ask: [[['trial', 'y']], [['enforced', 'y']]], overall: 'OVER_LIMIT', answers: [ok(1, 2), over(1)] },
    ],
  },
  {
    name: 'unlimited: OK with 4294967295 remaining and no current limit',
    fixture: 'unlimited.yaml',
    steps: times(3, () => ({ ask: [[['internal', 'a']]], overall: 'OK', answers: [ok(MAX_UINT32, null)] })),
  },
  {
    name: 'replaces: the replaced limit is not applied (nor counted) when the replacing one applies',
    fixture: 'replaces.yaml',
    steps: [
      ...times(3, (i) => ({
        ask: [[['api', 'x']], [['vip', 'x']]],
        overall: 'OK',
        answers: [none, ok(3 - i, 4)],
      })),
      { ask: [[['api', 'x']]], overall: 'OK', answers: [ok(1, 2)] },
    ],
  },
  {
    name: 'replaces on an unlimited limit: it replaces too',
    fixture: 'replaces.yaml',
    steps: [
      ...times(3, () => ({
        ask: [[['api', 'y']], [['staff', 'y']]],
        overall: 'OK',
        answers: [none, ok(MAX_UINT32, null)],
      })),
    ],
  },
  {
    name: 'wildcards: the first in the file that matches wins, an exact value before any',
    fixture: 'wildcard-prefix.yaml',
    steps: [
      { ask: [[['path', '/api/v2/users']]], overall: 'OK', answers: [ok(2, 3)] },
      { ask: [[['path', '/api/v2/users']]], overall: 'OK', answers: [ok(1, 3)] },
      { ask: [[['path', '/api/status']]], overall: 'OK', answers: [ok(99, 100)] },
      { ask: [[['path', '/apiary']]], overall: 'OK', answers: [none] },
    ],
  },
  {
    name: 'wildcards anywhere: at the start, in the middle, several in one value',
    fixture: 'wildcard-anywhere.yaml',
    steps: [
      { ask: [[['host', 'www.example.com']]], overall: 'OK', answers: [ok(1, 2)] },
      { ask: [[['host', 'example.com']]], overall: 'OK', answers: [none] },
      { ask: [[['path', '/users/42/avatar']]], overall: 'OK', answers: [ok(0, 1)] },
      { ask: [[['path', '/users/42/avatar']]], overall: 'OVER_LIMIT', answers: [over(1)] },
      { ask: [[['path', '/users/43/avatar']]], overall: 'OK', answers: [ok(0, 1)] },
      { ask: [[['path', '/users/42/name']]], overall: 'OK', answers: [none] },
      { ask: [[['path', '/a/v1/export.csv']]], overall: 'OK', answers: [ok(2, 3)] },
      { ask: [[['path', '/a/x1/export.csv']]], overall: 'OK', answers: [none] },
    ],
  },
  {
    name: 'share_threshold: every value a wildcard matches shares one counter',
    fixture: 'share-threshold.yaml',
    steps: [
      { ask: [[['path', '/files/a']]], overall: 'OK', answers: [ok(1, 2)] },
      { ask: [[['path', '/files/b']]], overall: 'OK', answers: [ok(0, 2)] },
      { ask: [[['path', '/files/c']]], overall: 'OVER_LIMIT', answers: [over(2)] },
      { ask: [[['path', '/pics/a']]], overall: 'OK', answers: [ok(1, 2)] },
      { ask: [[['path', '/pics/b']]], overall: 'OK', answers: [ok(1, 2)] },
    ],
  },
  {
    name: 'quota mode: over its quota, the descriptor answers OK',
    fixture: 'quota.yaml',
    steps: [
      { ask: [[['service', 'reports']]], overall: 'OK', answers: [ok(0, 1)] },
      { ask: [[['service', 'reports']]], overall: 'OK', answers: [ok(0, 1)] },
    ],
  },
  {
    name: 'hits_addend charges that many; a request over what is left is refused (and, our difference, charges nothing)',
    fixture: 'nested-units.yaml',
    steps: [
      { ask: [[['tenant', 'initech']]], hits: 30, overall: 'OK', answers: [ok(70, 100)] },
      { ask: [[['tenant', 'initech']]], hits: 71, overall: 'OVER_LIMIT', answers: [over(100, 70)] },
      { ask: [[['tenant', 'initech']]], hits: 70, overall: 'OK', answers: [ok(0, 100)] },
    ],
  },
  {
    name: 'an empty config value is the key alone; a number value is the text written',
    fixture: 'values-as-written.yaml',
    steps: [
      { ask: [[['any', 'whatever']]], overall: 'OK', answers: [ok(0, 1)] },
      { ask: [[['code', '007']]], overall: 'OK', answers: [ok(0, 1)] },
      { ask: [[['code', '7']]], overall: 'OK', answers: [none] },
    ],
  },
  {
    name: 'one descriptor over its limit makes the request OVER_LIMIT, the others answer OK',
    fixture: 'multi-document.yaml',
    domain: 'first',
    steps: [
      { ask: [[['k', 'a']], [['k', 'b']]], overall: 'OK', answers: [ok(0, 1), ok(0, 1)] },
      // Our difference: the refused request charges nothing, so k=c keeps its hit (Go: remaining 0).
      { ask: [[['k', 'a']], [['k', 'c']]], overall: 'OVER_LIMIT', answers: [over(1), ok(1, 1)] },
      { ask: [[['k', 'c']]], overall: 'OK', answers: [ok(0, 1)] },
    ],
  },
];

function serviceOf(fixture: string, options: { onOutcome?: (o: DescriptorOutcome) => void } = {}): RateLimitService {
  const domains = domainsOf(readFileSync(fixturePath(`envoy/accepted/${fixture}`), 'utf8'), fixture);
  return createRateLimitService({ domains, store: new MemoryStore(), clock: new ManualClock(START_MS), ...options });
}

function requestOf(domain: string, ask: Entries[], hits?: number) {
  return parseDecisionRequest({
    domain,
    hits_addend: hits,
    descriptors: ask.map((entries) => ({ entries: entries.map(([key, value]) => ({ key, value })) })),
  });
}

describe("envoyproxy/ratelimit's answers", () => {
  for (const c of CASES) {
    it(c.name, async () => {
      const service = serviceOf(c.fixture);
      const domain = c.domain ?? service.domains[0]!;
      for (const [i, step] of c.steps.entries()) {
        const result = await service.shouldRateLimit(requestOf(domain, step.ask, step.hits));
        const got = result.statuses.map((s) => [
          s.code,
          s.limitRemaining,
          s.rule?.unit === undefined ? null : s.rule.requestsPerUnit,
        ]);
        assert.deepEqual(
          { overall: result.overallCode, answers: got },
          { overall: step.overall, answers: step.answers },
          `step ${i}`,
        );
      }
    });
  }

  it("overrides: a request's own limit applies in a configured domain, not in an unknown one", async () => {
    const service = serviceOf('domain-only.yaml');
    const withLimit = (domain: string) =>
      parseDecisionRequest({
        domain,
        descriptors: [{ entries: [{ key: 'k', value: 'v' }], limit: { requests_per_unit: 1, unit: 'SECOND' } }],
      });
    assert.equal((await service.shouldRateLimit(withLimit('empty'))).overallCode, 'OK');
    assert.equal((await service.shouldRateLimit(withLimit('empty'))).overallCode, 'OVER_LIMIT');
    for (let i = 0; i < 3; i++) {
      const unknown = await service.shouldRateLimit(withLimit('nowhere'));
      assert.deepEqual([unknown.overallCode, unknown.statuses[0]!.rule], ['OK', undefined]);
    }
  });

  it("a descriptor's own hits_addend counts over the request's", async () => {
    const service = serviceOf('nested-units.yaml');
    const r = await service.shouldRateLimit(
      parseDecisionRequest({
        domain: 'nested',
        hits_addend: 5,
        descriptors: [
          { entries: [{ key: 'tenant', value: 'x' }] },
          { entries: [{ key: 'daily', value: 'x' }], hits_addend: { value: 40 } },
        ],
      }),
    );
    assert.deepEqual(
      r.statuses.map((s) => s.limitRemaining),
      [95, 960],
    );
  });

  it('replaces by a replaced limit still applies: every name any applying limit replaces is dropped', async () => {
    const domains = domainsOf(
      [
        'domain: chain',
        'descriptors:',
        '  - key: a',
        '    rate_limit: { name: a, unit: second, requests_per_unit: 1, replaces: [{ name: b }] }',
        '  - key: b',
        '    rate_limit: { name: b, unit: second, requests_per_unit: 1, replaces: [{ name: c }] }',
        '  - key: c',
        '    rate_limit: { name: c, unit: second, requests_per_unit: 1 }',
        '',
      ].join('\n'),
    );
    const service = createRateLimitService({ domains, clock: new ManualClock(START_MS) });
    const r = await service.shouldRateLimit(requestOf('chain', [[['a', '1']], [['b', '1']], [['c', '1']]]));
    assert.deepEqual(
      r.statuses.map((s) => s.rule?.name ?? null),
      ['a', null, null],
    );
  });

  it('duration_until_reset is the rest of the unit window', async () => {
    const clock = new ManualClock(START_MS + 250);
    const domains = domainsOf(readFileSync(fixturePath('envoy/accepted/nested-units.yaml'), 'utf8'));
    const service = createRateLimitService({ domains, clock });
    const r = await service.shouldRateLimit(
      requestOf('nested', [
        [
          ['tenant', 'acme'],
          ['user', 'u'],
        ],
      ]),
    );
    assert.equal(r.statuses[0]!.durationUntilResetMs, 750);
  });

  it('global shadow mode answers OK to every limit, counting it apart as shadow_limited', async () => {
    const outcomes: string[] = [];
    const domains = domainsOf(readFileSync(fixturePath('envoy/accepted/zero-and-missing.yaml'), 'utf8'));
    const service = createRateLimitService({ domains, shadowMode: true, onOutcome: (o) => outcomes.push(o.outcome) });
    const r = await service.shouldRateLimit(requestOf('zero', [[['blocked', 'a']]]));
    assert.deepEqual([r.overallCode, r.statuses[0]!.code, outcomes], ['OK', 'OK', ['shadow_limited']]);
  });
});

describe('examples/ratelimit/config/example.yaml', () => {
  it('loads, and answers as its comments say', async () => {
    const path = fileURLToPath(new URL('../../../../examples/ratelimit/config/example.yaml', import.meta.url));
    const service = createRateLimitService({
      domains: domainsOf(readFileSync(path, 'utf8'), 'example.yaml'),
      clock: new ManualClock(START_MS),
    });
    const answer = async (ask: Entries[]) => {
      const r = await service.shouldRateLimit(requestOf('rl', ask));
      return r.statuses.map((s) => [s.code, s.limitRemaining, s.rule?.name ?? s.rule?.requestsPerUnit ?? null]);
    };
    assert.deepEqual(await answer([[['path', '/api/v2/x/export']]]), [['OK', 9, 10]]);
    assert.deepEqual(await answer([[['path', '/api/a']]]), [['OK', 99, 100]]);
    assert.deepEqual(await answer([[['path', '/api/b']]]), [['OK', 98, 100]]);
    assert.deepEqual(await answer([[['user', 'u1']], [['plan', 'premium']]]), [
      ['OK', 0, null],
      ['OK', 599, 'premium'],
    ]);
    assert.deepEqual(
      await answer([
        [
          ['foo', 'f'],
          ['bar', 'banned'],
        ],
      ]),
      [['OVER_LIMIT', 0, 0]],
    );
    assert.deepEqual(
      await answer([
        [
          ['foo', 'f'],
          ['bay', 'x'],
        ],
      ]),
      [['OK', MAX_UINT32, null]],
    );
    for (let i = 0; i < 5; i++) await answer([[['report', 'r']]]);
    assert.deepEqual(await answer([[['report', 'r']]]), [['OK', 0, 5]]);
  });
});

describe('metric names: the configured path, never the request value unless asked', () => {
  it('wildcards by their pattern; detailed_metric and value_to_metric by the request values', async () => {
    const seen: Array<[string, string]> = [];
    const service = serviceOf('metrics-naming.yaml', { onOutcome: (o) => seen.push([o.domain, o.descriptor]) });
    await service.shouldRateLimit(requestOf('named', [[['tag', 'beta-secret-token-1']]]));
    await service.shouldRateLimit(requestOf('named', [[['client', 'abc']]]));
    await service.shouldRateLimit(
      requestOf('named', [
        [
          ['route', '/x'],
          ['method', 'GET'],
        ],
      ]),
    );
    assert.deepEqual(seen, [
      ['named', 'tag_beta*'],
      ['named', 'client_abc'],
      ['named', 'route_/x.method'],
    ]);
  });

  it('shadow and quota refusals are counted apart from refusals', async () => {
    const outcomes: string[] = [];
    const shadow = serviceOf('shadow.yaml', { onOutcome: (o) => outcomes.push(o.outcome) });
    for (let i = 0; i < 3; i++) await shadow.shouldRateLimit(requestOf('shadow', [[['trial', 'z']]]));
    await shadow.shouldRateLimit(requestOf('shadow', [[['enforced', 'z']]]));
    await shadow.shouldRateLimit(requestOf('shadow', [[['enforced', 'z']]]));
    const quota = serviceOf('quota.yaml', { onOutcome: (o) => outcomes.push(o.outcome) });
    for (let i = 0; i < 2; i++) await quota.shouldRateLimit(requestOf('quota', [[['service', 'reports']]]));
    assert.deepEqual(outcomes, [
      'admitted',
      'admitted',
      'shadow_limited',
      'admitted',
      'limited',
      'admitted',
      'quota_limited',
    ]);
  });
});
