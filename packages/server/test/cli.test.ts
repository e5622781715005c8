import assert from 'node:assert/strict';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { floodgate } from './support/cli.js';

const HERE = dirname(fileURLToPath(import.meta.url));

describe('the floodgate command', () => {
  it('has --help on every command', async () => {
    const top = await floodgate('--help');
    assert.equal(top.code, 0);
    for (const command of ['serve', 'check', 'schema', 'simulate'])
      assert.match(top.stdout, new RegExp(`^  ${command}\\b`, 'm'));
    const serve = await floodgate('serve', '--help');
    assert.equal(serve.code, 0);
    assert.match(serve.stdout, /--config <file>/);
    assert.match(serve.stdout, /--demo-upstream/);
    const check = await floodgate('check', '--help');
    assert.match(check.stdout, /Usage: floodgate check \[options\] <file>/);
  });

  it('check exits 1 with located problems, through the launcher', async () => {
    const bad = await floodgate('check', join(HERE, 'fixtures', 'unknown-key.yaml'));
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /unknown-key\.yaml:7:\d+ routes\[0\]\.rules\[0\]\.limt: unknown key "limt"/);
  });

  it("passes simulate's arguments through to the simulator, exit code included", async () => {
    const help = await floodgate('simulate', '--help');
    assert.equal(help.code, 0);
    assert.match(help.stdout, /Usage: floodgate simulate --scenario/);
    const bad = await floodgate('simulate', '--no-such-flag');
    assert.equal(bad.code, 2);
  });

  it('serve refuses an invalid config and exits 1, naming the problem', async () => {
    const r = await floodgate('serve', '--config', join(HERE, 'fixtures', 'cost-above-limit.yaml'), '--port', '0');
    assert.equal(r.code, 1);
    assert.match(r.stdout, /a cost of 6 can never be admitted/);
  });
});
