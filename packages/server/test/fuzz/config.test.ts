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
import { anyText, hostileJson } from '../../../floodgate/test/support/hostile.js';
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
    { weight: 1, arbitrary: anyText() },
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
