import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { PassThrough } from 'node:stream';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { runCheck, runSchema } from '../src/cli/commands.js';
import { loadConfig, parseConfig } from '../src/config/load.js';
import { ADAPTIVE_TIMEOUT_DEFAULTS } from 'floodgate';
import { ConfigError } from '../src/config/problems.js';
import type { StoreConfig } from '../src/config/schema.js';
import { gatewayOnStoreError } from '../src/store/store.js';

const FIXTURES = join(dirname(fileURLToPath(import.meta.url)), 'fixtures');

/** Each fixture holds one mistake (many-problems holds three): where it must be reported, and what the message says. */
const EXPECTED: Record<string, readonly (readonly [line: number, path: string, says: string])[]> = {
  'ambiguous-stance-unknown': [[5, 'routes[0].match.ambiguous', 'expected reject, normalise, or { default,']],
  'ambiguous-unknown': [[4, 'paths.ambiguous.semicolon', 'unknown key "semicolon"']],
  'bad-upstream': [[3, 'routes[0].upstream', 'an http:// or https:// URL']],
  'breaker-negative-threshold': [[5, 'routes[0].circuitBreaker.trigger.ratio', 'Too small']],
  'breaker-ratio-above-one': [[5, 'routes[0].circuitBreaker.trigger.ratio', 'Too big']],
  'overload-both-limits': [
    [5, 'routes[0].adaptive', 'both concurrency (a fixed limit) and adaptive (a learned limit) are given'],
  ],
  'overload-initial-outside': [
    [6, 'routes[0].adaptive.initialLimit', 'initialLimit (5) lies outside minLimit (10) to maxLimit (1000)'],
  ],
  'overload-min-above-max': [[5, 'routes[0].adaptive.minLimit', 'minLimit (50) is above maxLimit (10)']],
  'overload-zero-window': [[5, 'routes[0].adaptive.windowMs', 'Too small']],
  'path-not-normal': [[4, 'routes[0].match.path', 'the path pattern /api//%6cogin is not in normal form']],
  'priority-default-unknown': [
    [7, 'routes[0].priority.default', 'the default tier "bulk" is not one of the tiers (critical, batch)'],
  ],
  'priority-reserve-too-large': [
    [7, 'routes[0].priority.reserveRatio', 'reserveRatio × (tiers - 1) below 1, got 0.6 for 3 tiers'],
  ],
  'priority-tier-twice': [[6, 'routes[0].priority.tiers[2]', 'the tier "critical" is listed twice']],
  'priority-without-limit': [
    [6, 'routes[0].priority', 'priority tiers are given but there is no concurrency limit here'],
  ],
  'route-tier-unknown': [[6, 'routes[0].routeTier', 'routeTier "urgent" is not one of the tiers (critical, batch)']],
  'route-tier-without-priority': [
    [5, 'routes[0].routeTier', 'neither the route nor its upstream has a priority section'],
  ],
  'shed-bad-status': [[5, 'routes[0].shed.status', 'expected one of 503|429']],
  'shed-without-limit': [[4, 'routes[0].shed', 'there is no concurrency limit here']],
  'upstream-protects-nothing': [
    [5, 'upstreams[0]', 'protects nothing: it has no concurrency, adaptive or circuitBreaker section'],
  ],
  'upstream-twice': [[7, 'upstreams[1].url', 'the origin http://127.0.0.1:3000 is listed twice in upstreams']],
  'upstream-unused': [[5, 'upstreams[0].url', 'no route forwards to http://127.0.0.1:4000']],
  'upstream-with-path': [
    [5, 'upstreams[0].url', 'an upstreams url names an origin, but http://127.0.0.1:3000/v1 has a path'],
  ],
  'case-sensitive-not-boolean': [[5, 'routes[0].match.caseSensitive', 'expected boolean, received string']],
  'cost-above-limit': [
    [7, 'routes[0].rules[0].cost', 'a cost of 6 can never be admitted: the policy admits at most 5'],
  ],
  'duplicate-route': [[5, 'routes[1].name', 'the route name "api" is used twice']],
  'duplicate-rule': [[7, 'routes[0].rules[1].name', 'the rule name "per-ip" is used twice']],
  'duplicate-yaml-key': [[3, '', 'Map keys must be unique']],
  'identity-action-unknown': [[7, 'routes[0].rules[0].key.onAbsent', 'expected one of "refuse"|"fallback"|"skip"']],
  'identity-invalid-on-header': [[10, 'routes[0].rules[0].key.onInvalid', 'unknown key "onInvalid"']],
  'library-refuses': [[6, 'routes[0].rules[0].policy.limit', 'slidingWindowLog.limit must be at most']],
  'many-problems': [
    [1, 'listen.port', 'Too big'],
    [7, 'routes[0].rules[0].policy.capacity', 'Too small'],
    [8, 'routes[0].rules[0].colour', 'unknown key "colour"'],
  ],
  'missing-key': [[6, 'routes[0].rules[0].policy.refillPerSecond', 'missing number']],
  'no-routes': [[1, 'routes', 'the config serves nothing: it needs routes, a rateLimitService, or both']],
  'not-positive': [[6, 'routes[0].rules[0].policy.limit', 'Too small']],
  'refund-on-shadow': [
    [8, 'routes[0].rules[0].refundOn', 'refundOn is given but the rule is a shadow rule, which refuses nothing'],
  ],
  'refund-on-smooth': [
    [9, 'routes[0].rules[0].refundOn', "refundOn is given but the rule's policy smoothBursty paces requests"],
  ],
  'refund-on-unknown-status': [
    [7, 'routes[0].rules[0].refundOn[1]', 'refundOn lists 413 (body too large), 502 (upstream failed) or 504'],
  ],
  'queue-without-mode': [[7, 'routes[0].rules[0].queue', 'queue options are given but the rule\'s mode is "enforce"']],
  'redis-password-unset': [[4, 'store.passwordEnv', 'FLOODGATE_TEST_UNSET_PASSWORD is not set']],
  'redis-url-and-nodes': [[2, 'store', 'exactly one of url (one server) and nodes (a cluster)']],
  'redis-timeout-not-ms': [
    [4, 'store.timeoutMs', 'expected a number of ms above 0, or an adaptive timeout { floorMs, p99Multiple, capMs }'],
  ],
  'redis-timeout-floor-above-cap': [
    [4, 'store.timeoutMs.floorMs', 'store.timeoutMs.floorMs (300) must not be above store.timeoutMs.capMs (100)'],
  ],
  'redis-on-error-unknown': [[4, 'store.onError', 'expected local, fail-open, fail-closed, or { fallback: local }']],
  'redis-on-error-share-and-nodes': [[4, 'store.onError.share', 'both nodes and share are given']],
  'redis-on-error-share-above-one': [[6, 'store.onError.share', 'Too big']],
  'request-timeout-below-headers': [[1, 'limits.requestTimeoutMs', 'is shorter than headersTimeoutMs']],
  'secret-env-unset': [[7, 'routes[0].rules[0].key.secretEnv', 'FLOODGATE_TEST_UNSET_SECRET is not set']],
  'secret-twice': [[7, 'routes[0].rules[0].key.secretEnv', 'both secret and secretEnv are given']],
  'service-descriptor-unreadable': [[4, 'rateLimitService.descriptors[0]', 'cannot read the descriptor file']],
  'service-no-descriptors': [[3, 'rateLimitService.descriptors', 'name at least one Envoy descriptor file']],
  'service-without-listener': [
    [2, 'rateLimitService', 'the rateLimitService has no listener: it needs grpc, http or both'],
  ],
  'short-admin-token': [[1, 'admin.token', 'at least 16 characters']],
  'unknown-algorithm': [[6, 'routes[0].rules[0].policy.algorithm', "Expected 'tokenBucket' | 'leakyBucket'"]],
  'unknown-key': [[7, 'routes[0].rules[0].limt', 'unknown key "limt"']],
  'unknown-mode': [[7, 'routes[0].rules[0].mode', 'expected one of "enforce"|"shadow"|"queue"']],
  'unknown-param': [[8, 'routes[0].rules[0].key.name', 'has no parameter :user (its parameters are :id)']],
  'unreachable-route': [[5, 'routes[1].match', 'the route "users" is unreachable: route "all"']],
  'wrong-type': [[6, 'routes[0].rules[0].policy.capacity', 'expected number, received string']],
  'yaml-syntax': [[5, '', 'YAML syntax']],
};

async function problemsOf(name: string): Promise<ConfigError> {
  try {
    await loadConfig(join(FIXTURES, `${name}.yaml`), {});
  } catch (err) {
    assert.ok(err instanceof ConfigError, `${name}: a ConfigError, got ${String(err)}`);
    return err;
  }
  assert.fail(`${name}: the fixture was accepted`);
}

describe('config errors: one fixture per message', () => {
  it('has an expectation for every fixture, and a fixture for every expectation', () => {
    const files = readdirSync(FIXTURES)
      .map((f) => f.replace(/\.yaml$/, ''))
      .sort();
    assert.deepEqual(files, Object.keys(EXPECTED).sort());
  });

  for (const [name, expected] of Object.entries(EXPECTED)) {
    it(`${name}: reported at its line and path, with a fix`, async () => {
      const err = await problemsOf(name);
      assert.equal(err.code, 'CONFIG_INVALID');
      const wanted = name === 'yaml-syntax' ? err.problems.slice(0, 1) : err.problems;
      assert.equal(wanted.length, expected.length, `${name}: ${err.message}`);
      expected.forEach(([line, path, says], i) => {
        const p = wanted.find((q) => q.path === path && q.line === line);
        assert.ok(p !== undefined, `${name}: problem ${i} at line ${line} ${path}; got\n${err.message}`);
        assert.ok(p.message.includes(says), `${name}: "${p.message}" says "${says}"`);
        assert.ok(p.hint.length > 10, `${name}: a fix is given`);
        assert.ok(p.file.endsWith(`${name}.yaml`));
      });
      assert.match(err.message, new RegExp(`${name}\\.yaml:\\d+:\\d+`));
    });
  }

  it('an unreadable file is CONFIG_UNREADABLE, naming the file', async () => {
    await assert.rejects(
      loadConfig(join(FIXTURES, 'no-such-file.yaml')),
      (err: unknown) =>
        err instanceof ConfigError && err.code === 'CONFIG_UNREADABLE' && err.message.includes('no-such-file.yaml'),
    );
  });
});

describe('config: defaults and the offline commands', () => {
  it('fills defaults: memory store, enforce mode, cost 1, identity by ip, match everything', () => {
    const c = parseConfig(
      'routes:\n  - name: a\n    upstream: http://127.0.0.1:1\n    rules:\n      - name: r\n        policy: { algorithm: gcra, rate: 1, periodMs: 1000 }\n',
      'x.yaml',
      {},
    );
    assert.equal(c.store.type, 'memory');
    assert.deepEqual(c.routes[0]!.rules[0]!.key, { type: 'ip' });
    assert.equal(c.routes[0]!.rules[0]!.mode, 'enforce');
    assert.equal(c.routes[0]!.rules[0]!.cost, 1);
    assert.equal(c.routes[0]!.match.path, '/*');
  });

  it("a redis store: the library's adaptive timeout, local fallback and write-back by default; a fixed or adaptive timeout and each failure policy when given", () => {
    const storeOf = (store: string): StoreConfig =>
      parseConfig(`store: ${store}\nroutes:\n  - name: a\n    upstream: http://127.0.0.1:1\n`, 'x.yaml', {}).store;
    assert.deepEqual(storeOf('{ type: redis, url: "redis://127.0.0.1:7000" }'), {
      type: 'redis',
      url: 'redis://127.0.0.1:7000',
      onError: 'local',
      writeBack: true,
    });
    assert.deepEqual(
      storeOf('{ type: redis, url: "redis://127.0.0.1:7000", timeoutMs: 40, onError: fail-closed, writeBack: false }'),
      { type: 'redis', url: 'redis://127.0.0.1:7000', timeoutMs: 40, onError: 'fail-closed', writeBack: false },
    );
    const adaptive = storeOf(
      '{ type: redis, url: "redis://127.0.0.1:7000", timeoutMs: { floorMs: 10, capMs: 100 }, onError: { fallback: local, nodes: 3 } }',
    );
    assert.ok(adaptive.type === 'redis');
    assert.deepEqual(adaptive.timeoutMs, { floorMs: 10, capMs: 100 });
    assert.deepEqual(adaptive.onError, { fallback: 'local', nodes: 3 });
    const shared = storeOf('{ type: redis, url: "redis://127.0.0.1:7000", onError: { fallback: local, share: 0.5 } }');
    assert.ok(shared.type === 'redis');
    assert.deepEqual(shared.onError, { fallback: 'local', share: 0.5 });
    assert.equal(storeOf('{ type: redis, url: "redis://127.0.0.1:7000", onError: fail-open }').type, 'redis');
  });

  it('docs/gateway-store.md: every config shown loads as written', () => {
    const page = readFileSync(join(FIXTURES, '..', '..', '..', '..', 'docs', 'gateway-store.md'), 'utf8');
    const blocks = [...page.matchAll(/^```yaml\n([\s\S]*?)^```$/gm)].map((m) => m[1]!);
    assert.equal(blocks.length, 4);
    const stores = blocks.map((yaml, i) => parseConfig(yaml, `gateway-store.md block ${i + 1}`, {}).store);
    const { timeoutMs, ...spelledOut } = stores[1] as Extract<StoreConfig, { type: 'redis' }>;
    assert.deepEqual(timeoutMs, { ...ADAPTIVE_TIMEOUT_DEFAULTS }, "the page shows the library's adaptive defaults");
    assert.deepEqual(stores[0], spelledOut, 'the first config is the second with its defaults left out');
  });

  it("the gateway's own answer when a store throws after all follows the store's policy: fail-closed only under fail-closed", () => {
    assert.equal(gatewayOnStoreError({ type: 'memory' }), 'fail-open');
    for (const onError of ['local', 'fail-open', { fallback: 'local', nodes: 2 }] as const)
      assert.equal(gatewayOnStoreError({ type: 'redis', url: 'redis://h:1', onError, writeBack: true }), 'fail-open');
    assert.equal(
      gatewayOnStoreError({ type: 'redis', url: 'redis://h:1', onError: 'fail-closed', writeBack: true }),
      'fail-closed',
    );
  });

  it('check exits 0 on the example config and 1 with every problem on a bad one', async () => {
    const out = new PassThrough();
    const err = new PassThrough();
    let text = '';
    err.on('data', (c: Buffer) => (text += c.toString()));
    const example = join(FIXTURES, '..', '..', '..', '..', 'examples', 'gateway', 'floodgate.yaml');
    assert.equal(await runCheck(example, out, err), 0);
    assert.equal(await runCheck(join(FIXTURES, 'many-problems.yaml'), out, err), 1);
    assert.match(text, /3 problems found/);
    assert.match(text, /many-problems\.yaml:8:\d+ routes\[0\]\.rules\[0\]\.colour: unknown key "colour" \(fix: /);
  });

  it('schema prints a JSON Schema that forbids unknown keys', () => {
    const out = new PassThrough();
    let text = '';
    out.on('data', (c: Buffer) => (text += c.toString()));
    assert.equal(runSchema(out), 0);
    const schema = JSON.parse(text) as {
      $schema: string;
      additionalProperties: boolean;
      required: string[];
      properties: Record<string, unknown>;
    };
    assert.match(schema.$schema, /json-schema\.org/);
    assert.equal(schema.additionalProperties, false);
    assert.equal(schema.required, undefined);
    assert.ok('store' in schema.properties && 'limits' in schema.properties && 'rateLimitService' in schema.properties);
    assert.ok('upstreams' in schema.properties, 'the overload protection shared per upstream');
    const route = (schema.properties.routes as { items: { properties: Record<string, unknown> } }).items.properties;
    for (const section of ['concurrency', 'adaptive', 'circuitBreaker', 'priority', 'shed', 'routeTier'])
      assert.ok(section in route, section);
  });
});
