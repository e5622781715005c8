// floodgate check tells each kind of file apart, says which command reads it, and checks it with
// that command's own reader: never the gateway config's advice ("unknown key domain") on another kind.
import assert from 'node:assert/strict';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { runCheck, runSchema } from '../src/cli/commands.js';
import { fileKindOf } from '../src/cli/file-kind.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const SCENARIOS = join(ROOT, 'packages', 'simulator', 'scenarios');

async function check(file: string): Promise<{ code: number; stdout: string; stderr: string }> {
  const out = new PassThrough();
  const err = new PassThrough();
  let stdout = '';
  let stderr = '';
  out.on('data', (c: Buffer) => (stdout += c.toString()));
  err.on('data', (c: Buffer) => (stderr += c.toString()));
  const code = await runCheck(file, out, err);
  return { code, stdout, stderr };
}

describe('floodgate check on each kind of file', () => {
  let dir: string;
  const at = (name: string): string => join(dir, name);
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'floodgate-check-'));
    const files: Record<string, string> = {
      'bad-descriptors.yaml':
        'domain: api\ndescriptors:\n  - key: tenant\n    rate_limit: { unit: fortnight, requests_per_unit: 2 }\n',
      'misspelt.yaml':
        'durationMs: 1000\ntraffic:\n  - type: constant\n    ratePerSecond: 10\npolicies:\n  - name: a\n    policy: { type: fixed-window, limt: 5, windowMs: 1000 }\n',
      'with-trace.yaml':
        'durationMs: 1000\ntraffic:\n  - type: trace\n    file: requests.csv\npolicies:\n  - name: a\n    policy: { type: fixed-window, limit: 5, windowMs: 1000 }\n',
      'missing-trace.yaml':
        'durationMs: 1000\ntraffic:\n  - type: trace\n    file: nowhere.csv\npolicies:\n  - name: a\n    policy: { type: fixed-window, limit: 5, windowMs: 1000 }\n',
      'requests.csv': 'atMs,key,cost\n0,a,1\n10,b,2\n',
      'bad.jsonl': '{"atMs": 0}\n{"atMs": "soon"}\n',
      'scenario.json': JSON.stringify({
        durationMs: 1000,
        traffic: [{ type: 'constant', ratePerSecond: 5 }],
        policies: [{ name: 'g', policy: { type: 'gcra', rate: 5, periodMs: 1000, maxBurst: 1 } }],
      }),
      'gateway-typo.yaml':
        'routes:\n  - name: api\n    upstream: http://127.0.0.1:1\n    rules:\n      - name: r\n        limt: 3\n        policy: { algorithm: fixedWindow, limit: 1, windowMs: 1000 }\n',
    };
    for (const [name, text] of Object.entries(files)) await writeFile(at(name), text);
    const schema = new PassThrough();
    let text = '';
    schema.on('data', (c: Buffer) => (text += c.toString()));
    runSchema(schema);
    await writeFile(at('schema.json'), text);
  });
  after(async () => {
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  it('a gateway config: says so and names floodgate serve', async () => {
    const r = await check(join(ROOT, 'examples', 'gateway', 'floodgate.yaml'));
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /: a gateway config, read by floodgate serve --config \S+floodgate\.yaml: valid \(4 routes/);
  });

  it("a gateway config with a mistake is still read as one, with the config loader's located problem", async () => {
    const r = await check(at('gateway-typo.yaml'));
    assert.equal(r.code, 1);
    assert.match(r.stderr, /a gateway config, read by floodgate serve/);
    assert.match(r.stderr, /gateway-typo\.yaml:6:\d+ routes\[0\]\.rules\[0\]\.limt: unknown key "limt"/);
  });

  it("an Envoy descriptor file: floodgate ratelimit's reader checks it, with no gateway advice", async () => {
    const good = await check(join(ROOT, 'examples', 'gateway', 'ratelimit.yaml'));
    assert.equal(good.code, 0, good.stderr);
    assert.match(good.stdout, /an Envoy descriptor file .*read by floodgate ratelimit --config .*: valid \(1 domain/);
    const bad = await check(at('bad-descriptors.yaml'));
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /an Envoy descriptor file/);
    assert.match(
      bad.stderr,
      /bad-descriptors\.yaml:4:\d+: descriptors\[0\]\.rate_limit\.unit: unknown unit "fortnight"/,
    );
    assert.doesNotMatch(bad.stderr, /remove|unknown key "domain"/);
  });

  it('every scenario shipped in packages/simulator/scenarios checks as a simulator scenario', async () => {
    const names = (await readdir(SCENARIOS)).filter((n) => /\.(ya?ml|json)$/.test(n));
    assert.ok(names.length > 0);
    for (const name of names) {
      const r = await check(join(SCENARIOS, name));
      assert.equal(r.code, 0, `${name}: ${r.stderr}`);
      assert.match(
        r.stdout,
        new RegExp(`a simulator scenario, read by floodgate simulate --scenario \\S+${name}: valid`),
      );
    }
  });

  it("a scenario's misspelt field is placed on its line by the simulator's parser, which suggests the name", async () => {
    const r = await check(at('misspelt.yaml'));
    assert.equal(r.code, 1);
    assert.match(r.stderr, /misspelt\.yaml:7:\d+: scenario field policies\[0\]\.policy\.limt .*limit/);
    assert.doesNotMatch(r.stderr, /unknown key "(durationMs|traffic|policies)"/);
  });

  it('a JSON scenario, and the trace files a scenario names (read relative to it) are checked too', async () => {
    assert.equal((await check(at('scenario.json'))).code, 0);
    const withTrace = await check(at('with-trace.yaml'));
    assert.equal(withTrace.code, 0, withTrace.stderr);
    const missing = await check(at('missing-trace.yaml'));
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /missing-trace\.yaml: traffic\[0\]\.file: .*nowhere\.csv/);
  });

  it("a trace: the simulator's trace reader checks it, naming the line at fault", async () => {
    const good = await check(at('requests.csv'));
    assert.equal(good.code, 0, good.stderr);
    assert.match(good.stdout, /a simulator trace .*run by floodgate simulate: valid \(2 requests\)/);
    const bad = await check(at('bad.jsonl'));
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /bad\.jsonl:2/);
  });

  it('a file of no kind floodgate reads says so before the gateway reader refuses it', async () => {
    const r = await check(join(ROOT, '.prettierrc.json'));
    assert.equal(r.code, 1);
    assert.match(r.stderr, /^\S+\.prettierrc\.json: not a kind of file floodgate reads .*no floodgate command/);
  });

  it('the JSON Schema floodgate schema prints is named as such, not checked as a config', async () => {
    const r = await check(at('schema.json'));
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /a JSON Schema .*no floodgate command reads it/);
  });
});

describe('fileKindOf', () => {
  const gateway = ['listen', 'admin', 'store', 'routes', 'upstreams', 'rateLimitService', 'trustProxy'];
  it('reads the kind from the top-level keys, and falls back to a gateway config', () => {
    const cases: Array<[string, string, string]> = [
      ['a.yaml', 'domain: x\ndescriptors: []\n', 'descriptors'],
      ['a.yaml', '---\ndomain: x\n---\ndomain: y\n', 'descriptors'],
      ['a.yaml', 'durationMs: 5\npolicies: []\n', 'scenario'],
      ['a.yaml', 'service: {}\n', 'scenario'],
      ['a.csv', 'atMs\n1\n', 'trace'],
      ['a.jsonl', '{"atMs":1}\n', 'trace'],
      ['a.yaml', 'routes: []\nstore: { type: memory }\n', 'gateway-config'],
      ['a.yaml', 'routes: []\ndomain: x\n', 'gateway-config'],
      ['a.yaml', '', 'gateway-config'],
      ['a.yaml', 'routs: [\n', 'gateway-config'],
      ['a.yaml', '- 1\n- 2\n', 'gateway-config'],
      ['a.json', '{"printWidth": 120, "singleQuote": true}', 'unknown'],
      ['a.yaml', 'rotes: []\nstore: {}\n', 'gateway-config'],
    ];
    for (const [path, text, kind] of cases) assert.equal(fileKindOf(path, text, gateway), kind, text);
  });
});
