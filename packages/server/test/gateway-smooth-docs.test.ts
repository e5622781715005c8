/**
 * docs/gateway-pacing.md and examples/gateway/paced.yaml: every config shown loads as written and
 * compiles to the smooth rules the page describes, with the headers it shows.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { MemoryStore } from 'floodgate';
import { loadConfig, parseConfig } from '../src/config/load.js';
import { RouteTable } from '../src/gateway/routes.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

describe('docs/gateway-pacing.md and its example', () => {
  const page = readFileSync(join(ROOT, 'docs', 'gateway-pacing.md'), 'utf8');
  const blocks = [...page.matchAll(/```yaml\n([^]*?)```/g)].map((m) => m[1]!);

  it('the config shown loads as written, a bursty and a warming-up pace on one route', () => {
    assert.equal(blocks.length, 1);
    const config = parseConfig(blocks[0]!, 'gateway-pacing.md block 1', {});
    const table = RouteTable.build(config, { store: new MemoryStore(), env: {} });
    const route = table.routes[0]!;
    assert.equal(route.rules.length, 0);
    assert.deepEqual(
      route.smooth.map((r) => [r.name, r.maxWaitMs, r.maxQueue, r.policyItem]),
      [
        ['partner-pace', 2000, 100, '"partner-pace";q=10;w=1'],
        ['cold-start-pace', 1000, 100, '"cold-start-pace";q=5;w=1'],
      ],
    );
    assert.ok(page.includes('"partner-pace";q=10;w=1') && page.includes('"partner-pace";r=0;t=2'));
  });

  it('examples/gateway/paced.yaml loads, with its pace beside a counted rule', async () => {
    const { config } = await loadConfig(join(ROOT, 'examples', 'gateway', 'paced.yaml'), {});
    assert.equal(config.store.type, 'redis');
    const table = RouteTable.build(config, { store: new MemoryStore(), env: {} });
    const [partner, reports] = table.routes;
    assert.deepEqual(
      partner!.rules.map((r) => r.name),
      ['per-client'],
    );
    assert.deepEqual(
      [partner!.smooth.map((r) => r.name), reports!.smooth.map((r) => r.name)],
      [['partner-pace'], ['cold-start-pace']],
    );
  });
});
