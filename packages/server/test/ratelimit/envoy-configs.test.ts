/**
 * envoyproxy/ratelimit's config contract, as a user moving from it meets it: every kind of config
 * it accepts loads here unchanged (fixtures/envoy/accepted), and every kind it refuses is refused
 * here, each with our `file:line:column: path: message` (fixtures/envoy/refused, the expected
 * place and message in each file's first line). The fixtures are our own, written from the
 * behaviour its config tests specify.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { formatConfigError, mergeDescriptorConfigs, parseDescriptorConfig } from '../../src/ratelimit/index.js';
import { fixturePath } from './support.js';

const ACCEPTED = fixturePath('envoy/accepted');
const REFUSED = fixturePath('envoy/refused');

function yamlFiles(dir: string): string[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.yaml'))
    .sort();
}

describe('envoyproxy/ratelimit configs it accepts load unchanged', () => {
  const files = yamlFiles(ACCEPTED);
  it('holds the kinds of config the contract names', () => assert.equal(files.length, 14));
  for (const file of files) {
    it(file, () => {
      const parsed = parseDescriptorConfig(readFileSync(`${ACCEPTED}/${file}`, 'utf8'), file);
      assert.ok('config' in parsed, 'errors' in parsed ? parsed.errors.map(formatConfigError).join('\n') : '');
      assert.ok(parsed.config.domains.length > 0);
    });
  }

  it('every accepted file loads together with the others (no domain twice)', () => {
    const configs = yamlFiles(ACCEPTED).map((f) => {
      const parsed = parseDescriptorConfig(readFileSync(`${ACCEPTED}/${f}`, 'utf8'), f);
      assert.ok('config' in parsed);
      return parsed.config;
    });
    assert.ok('config' in mergeDescriptorConfigs(configs));
  });
});

describe('envoyproxy/ratelimit configs it refuses are refused, at the place of the fault', () => {
  const files = yamlFiles(REFUSED);
  it('holds the kinds of refusal the contract names', () => assert.equal(files.length, 17));
  for (const file of files) {
    it(file, () => {
      const text = readFileSync(`${REFUSED}/${file}`, 'utf8');
      const expect = /^# expect: (\d+):(\d+) (\S*) ?~ (.+)$/m.exec(text);
      assert.ok(expect !== null, `${file} names its expected error in its first line`);
      const parsed = parseDescriptorConfig(text, file);
      assert.ok('errors' in parsed, `${file} was accepted`);
      const [, line, column, path, message] = expect;
      const found = parsed.errors.find((e) => e.line === Number(line) && e.column === Number(column));
      assert.ok(
        found !== undefined,
        `no error at ${line}:${column}; got ${parsed.errors.map(formatConfigError).join('; ')}`,
      );
      assert.equal(found.path, path);
      assert.match(found.message, new RegExp(message!));
      assert.match(formatConfigError(found), new RegExp(`^${file}:${line}:${column}: `));
    });
  }

  it('a domain in two files is reported at the second `domain:` line, naming the first', () => {
    const a = parseDescriptorConfig('# first\ndomain: shared\n', 'a.yaml');
    const b = parseDescriptorConfig('# a comment\n\ndomain: shared\n', 'b.yaml');
    assert.ok('config' in a && 'config' in b);
    const merged = mergeDescriptorConfigs([a.config, b.config]);
    assert.ok('errors' in merged);
    assert.equal(
      formatConfigError(merged.errors[0]!),
      'b.yaml:3:9: domain: domain "shared" is already defined at a.yaml:2:9',
    );
  });

  it('with mergeDomains (MERGE_DOMAIN_CONFIG), a domain spans files; a descriptor defined in both is the error', () => {
    const a = parseDescriptorConfig(
      'domain: shared\ndescriptors:\n  - key: a\n    rate_limit: { unit: second, requests_per_unit: 1 }\n',
      'a.yaml',
    );
    const b = parseDescriptorConfig(
      'domain: shared\ndescriptors:\n  - key: b\n    rate_limit: { unit: second, requests_per_unit: 2 }\n',
      'b.yaml',
    );
    const c = parseDescriptorConfig('domain: shared\ndescriptors:\n  - key: z\n  - key: a\n', 'c.yaml');
    assert.ok('config' in a && 'config' in b && 'config' in c);
    const merged = mergeDescriptorConfigs([a.config, b.config], { mergeDomains: true });
    assert.ok('config' in merged);
    assert.deepEqual(
      merged.config.domains.map((d) => [d.domain, d.descriptors.map((x) => x.key)]),
      [['shared', ['a', 'b']]],
    );
    const clash = mergeDescriptorConfigs([a.config, c.config], { mergeDomains: true });
    assert.ok('errors' in clash);
    assert.equal(
      formatConfigError(clash.errors[0]!),
      'c.yaml:4:5: descriptors[1]: duplicate descriptor: "a" of domain "shared" is already defined at a.yaml:3:5',
    );
  });
});
