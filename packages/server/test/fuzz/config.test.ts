/**
 * Fuzzing the config readers (support/fuzz.ts): the gateway's YAML config (parseConfig) and the
 * rate limit service's Envoy descriptor files (parseDescriptorConfig). Any text gives, within the
 * time limit, a checked config or the problems found: a ConfigError from parseConfig, a list of
 * errors from parseDescriptorConfig, which throws nothing.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { parseConfig } from '../../src/config/load.js';
import { ConfigError } from '../../src/config/problems.js';
import { parseDescriptorConfig } from '../../src/ratelimit/service/config.js';
import { fuzz } from '../../../floodgate/test/support/fuzz.js';
import { hostileJson, hostileText, longText } from '../../../floodgate/test/support/hostile.js';
import { runs } from '../../../floodgate/test/support/sweep.js';
import { stringify } from 'yaml';
import { BILLION_LAUGHS, deepYaml, mutated, yamlFilesIn } from '../../../floodgate/test/support/yaml-inputs.js';

const FIXTURES = new URL('../fixtures', import.meta.url).pathname;
const EXAMPLES = new URL('../../../../examples/gateway', import.meta.url).pathname;
const ENVOY = new URL('../ratelimit/fixtures', import.meta.url).pathname;

const GATEWAY_KEYS = [
  'listen',
  'upstream',
  'routes',
  'rules',
  'match',
  'path',
  'limit',
  'windowMs',
  'algorithm',
  'identity',
  'store',
  'admin',
  'redis',
  'rateLimitService',
  'port',
  'host',
  'name',
  'cost',
];
const DESCRIPTOR_KEYS = [
  'domain',
  'descriptors',
  'key',
  'value',
  'rate_limit',
  'unit',
  'requests_per_unit',
  'algorithm',
  'shadow_mode',
  'quota',
  'smooth_limits',
];
/**
 * The longest garbage fed to the YAML readers. The YAML library itself spends about 1.3 s on
 * 100,000 characters of `]` (a syntax error each) on the 2-core machine; a config file is the
 * operator's, read at start and reload, so the 1 s bound is held up to this length.
 */
const MAX_YAML_LENGTH = 20_000;

/** YAML the readers fail on in the same ways as the fuzzer found, kept as fixed cases. */
const REGRESSIONS = [BILLION_LAUGHS, 'a: *missing', 'listen: *nope\n', 'routes: [*x]'];

/** shaped returns YAML of values under `keys` in the wrong shapes. */
export function shaped(keys: readonly string[]): fc.Arbitrary<string> {
  return hostileJson(keys).map((value) => {
    try {
      return stringify(value);
    } catch {
      return String(value);
    }
  });
}

const isConfigError = (error: unknown): boolean => error instanceof ConfigError && error.problems.length > 0;

function yamlInputs(files: readonly string[], keys: readonly string[]): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 6, arbitrary: mutated(files) },
    { weight: 3, arbitrary: shaped(keys) },
    { weight: 1, arbitrary: deepYaml },
    { weight: 1, arbitrary: hostileText() },
    { weight: 1, arbitrary: longText(hostileText(4), MAX_YAML_LENGTH) },
    { weight: 1, arbitrary: fc.constantFrom(...REGRESSIONS) },
  );
}

describe('fuzzing the config readers', () => {
  const gatewayFiles = yamlFilesIn(FIXTURES, EXAMPLES);
  const descriptorFiles = yamlFilesIn(ENVOY).concat(gatewayFiles.filter((t) => /^domain:/m.test(t)));

  for (const text of REGRESSIONS)
    it(`parseConfig refuses ${JSON.stringify(text.slice(0, 30))} with a ConfigError`, () => {
      assert.throws(() => parseConfig(text, 'fuzz.yaml', {}), isConfigError);
    });

  it('lists the first 20 YAML syntax problems of garbage, and counts the rest in one more', () => {
    // Found by the fuzzer: 100,000 characters of `]` gave 100,000 problems, an 18 MB message.
    const garbage = ']'.repeat(MAX_YAML_LENGTH);
    assert.throws(
      () => parseConfig(garbage, 'fuzz.yaml', {}),
      (e: unknown) =>
        e instanceof ConfigError &&
        e.problems.length === 21 &&
        e.problems[20]!.message === `YAML syntax: ${MAX_YAML_LENGTH - 20} more problems from here on`,
    );
    const parsed = parseDescriptorConfig(garbage, 'fuzz.yaml');
    assert.ok('errors' in parsed && parsed.errors.length === 21, JSON.stringify(parsed).slice(0, 200));
  });

  it('parseConfig: a checked config, or a ConfigError listing its problems', () => {
    fuzz(
      'gateway config (parseConfig)',
      yamlInputs(gatewayFiles, GATEWAY_KEYS),
      (text) => parseConfig(text, 'fuzz.yaml', { FUZZ_SET: 'x' }),
      { runs: runs(600), typed: isConfigError },
    );
  });

  it('parseDescriptorConfig: the domains, or errors each with a place and a message', () => {
    fuzz(
      'Envoy descriptor config (parseDescriptorConfig)',
      yamlInputs(descriptorFiles, DESCRIPTOR_KEYS),
      (text) => {
        const parsed = parseDescriptorConfig(text, 'fuzz.yaml');
        if ('errors' in parsed)
          for (const e of parsed.errors) assert.ok(e.message !== '' && e.line >= 0 && e.source === 'fuzz.yaml');
        else assert.ok(parsed.config.domains.length > 0);
      },
      { runs: runs(600) },
    );
  });
});
