import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  formatConfigError,
  mergeDescriptorConfigs,
  parseDescriptorConfig,
  type ConfigError,
} from '../../src/ratelimit/index.js';
import { fixtureDomains } from './support.js';

function errorsOf(text: string): ConfigError[] {
  const parsed = parseDescriptorConfig(text, 'rl.yaml');
  assert.ok('errors' in parsed, 'expected errors');
  return parsed.errors;
}

describe('descriptor config: envoyproxy/ratelimit example configs load unchanged', () => {
  it('examples/ratelimit/config/example.yaml', () => {
    const [rl] = fixtureDomains('example.yaml');
    assert.equal(rl!.domain, 'rl');
    assert.deepEqual(
      rl!.descriptors.map((d) => [d.key, d.value ?? null]),
      [
        ['source_cluster', 'proxy'],
        ['foo', null],
        ['qux', null],
      ],
    );
    const foo = rl!.descriptors[1]!;
    assert.deepEqual(foo.rateLimit, {
      unit: 'minute',
      requestsPerUnit: 2,
      unlimited: false,
      name: undefined,
      replaces: [],
      algorithm: 'fixed-window',
      cost: 1,
    });
    const shady = foo.descriptors.find((d) => d.value === 'shady')!;
    assert.equal(shady.shadowMode, true);
    assert.equal(foo.descriptors.find((d) => d.key === 'bay')!.rateLimit!.unlimited, true);
    assert.equal(foo.descriptors.find((d) => d.value === 'banned')!.rateLimit!.requestsPerUnit, 0);
  });

  it('examples/ratelimit/config/config.yaml and quota.yaml (quota_mode is read)', () => {
    assert.equal(fixtureDomains('config.yaml')[0]!.domain, 'mongo_cps');
    const quota = fixtureDomains('quota.yaml')[0]!;
    assert.equal(quota.descriptors[0]!.quotaMode, true);
  });

  it('the nine README examples, one document each', () => {
    const domains = fixtureDomains('readme-examples.yaml');
    assert.deepEqual(
      domains.map((d) => d.domain),
      [
        'mongo_cps',
        'messaging',
        'edge_proxy_per_ip',
        'example4',
        'internal',
        'example6',
        'example7',
        'example8',
        'example9',
      ],
    );
    const e7 = domains[6]!;
    assert.deepEqual(e7.descriptors[1]!.descriptors[0]!.rateLimit!.replaces, ['specific_limit']);
    assert.equal(domains[7]!.descriptors[0]!.detailedMetric, true);
    assert.equal(domains[8]!.descriptors[0]!.value, 'value*');
  });

  it('values keep the text written (010 stays "010"), units any case, floodgate algorithms', () => {
    const parsed = parseDescriptorConfig(
      'domain: d\ndescriptors:\n  - key: k\n    value: 010\n    rate_limit: { unit: Week, requests_per_unit: 3, algorithm: gcra }\n',
      'd.yaml',
    );
    assert.ok('config' in parsed);
    const d = parsed.config.domains[0]!.descriptors[0]!;
    assert.equal(d.value, '010');
    assert.equal(d.rateLimit!.unit, 'week');
    assert.equal(d.rateLimit!.algorithm, 'gcra');
  });
});

describe('descriptor config: strict, every error at once with file, line, column and path', () => {
  it('an unknown key is named with its place', () => {
    const [e] = errorsOf(
      'domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: second\n      requests_per_unit: 1\n      burst: 5\n',
    );
    assert.deepEqual(
      { line: e!.line, column: e!.column, path: e!.path },
      { line: 7, column: 7, path: 'descriptors[0].rate_limit.burst' },
    );
    assert.match(e!.message, /unknown key "burst"/);
    assert.equal(formatConfigError(e!), `rl.yaml:7:7: descriptors[0].rate_limit.burst: ${e!.message}`);
  });

  it('collects all errors of a file', () => {
    const errors = errorsOf(
      [
        'domain: ""',
        'descriptors:',
        '  - key: a',
        '    rate_limit: { unit: fortnight, requests_per_unit: 1 }',
        '  - key: b',
        '    rate_limit: { unit: second, requests_per_unit: -1 }',
        '  - key: c',
        '    rate_limit: { unit: second, requests_per_unit: 1, unlimited: true }',
        '  - value: x',
        '  - key: d',
        '    shadow_mode: yes please',
        '  - key: e',
        '    rate_limit: { unit: second, requests_per_unit: 1, name: e, replaces: [{ name: e }] }',
        '  - key: f',
        '    rate_limit: { unit: second, requests_per_unit: 1, algorithm: leaky }',
        '  - key: a',
        '    descriptors: nope',
        '',
      ].join('\n'),
    );
    const byPath = new Map(errors.map((e) => [e.path, e]));
    assert.match(byPath.get('domain')!.message, /non-empty/);
    assert.match(byPath.get('descriptors[0].rate_limit.unit')!.message, /unknown unit "fortnight"/);
    assert.equal(byPath.get('descriptors[0].rate_limit.unit')!.line, 4);
    assert.match(byPath.get('descriptors[1].rate_limit.requests_per_unit')!.message, /whole number/);
    assert.match(byPath.get('descriptors[2].rate_limit.unit')!.message, /must not be given with unlimited: true/);
    assert.match(byPath.get('descriptors[3].key')!.message, /is required/);
    assert.match(byPath.get('descriptors[4].shadow_mode')!.message, /true or false/);
    assert.match(byPath.get('descriptors[5].rate_limit.replaces[0].name')!.message, /cannot replace itself/);
    assert.match(byPath.get('descriptors[6].rate_limit.algorithm')!.message, /unknown algorithm "leaky"/);
    assert.match(byPath.get('descriptors[7].descriptors')!.message, /list of descriptors/);
    assert.ok(errors.length >= 9);
  });

  it('a duplicate descriptor at one level, a duplicate domain, a YAML syntax error, an empty file', () => {
    const dup = errorsOf('domain: d\ndescriptors:\n  - key: k\n    value: v\n  - key: k\n    value: v\n');
    assert.equal(dup[0]!.path, 'descriptors[1]');
    assert.match(dup[0]!.message, /duplicate descriptor/);
    assert.match(errorsOf('domain: d\n---\ndomain: d\n')[0]!.message, /defined twice/);
    const syntax = errorsOf('domain: d\ndescriptors:\n  - key: [unclosed\n');
    assert.ok(syntax.length > 0 && syntax[0]!.line >= 3);
    assert.match(errorsOf('')[0]!.message, /no domain/);
    assert.match(errorsOf('- just\n- a list\n')[0]!.message, /must be a mapping/);
  });

  it('replaces needs names; mergeDescriptorConfigs refuses a domain in two files', () => {
    const errors = errorsOf(
      'domain: d\ndescriptors:\n  - key: k\n    rate_limit: { unit: second, requests_per_unit: 1, replaces: [{ nom: x }] }\n',
    );
    assert.ok(errors.some((e) => e.path === 'descriptors[0].rate_limit.replaces[0].nom'));
    const a = parseDescriptorConfig('domain: d\n', 'a.yaml');
    const b = parseDescriptorConfig('domain: d\n', 'b.yaml');
    assert.ok('config' in a && 'config' in b);
    const merged = mergeDescriptorConfigs([a.config, b.config]);
    assert.ok('errors' in merged);
    assert.match(merged.errors[0]!.message, /already defined at a.yaml:1:9/);
    assert.deepEqual([merged.errors[0]!.source, merged.errors[0]!.line, merged.errors[0]!.column], ['b.yaml', 1, 9]);
  });
});
