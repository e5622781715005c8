/**
 * Runs every example under examples/ (but the gateway's, which has its own tests) as a user would,
 * and checks what it prints: each HTTP example admits, then refuses; the Redis one runs against a
 * test-started redis-server; the waiting one waits in order and gives up with a typed error.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { startRedisServer, type RedisServers } from '../support/redis-server.js';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../../../../', import.meta.url));

/** Each example, and lines (as patterns) its output must contain, in this order. */
const EXPECTED: Record<string, RegExp[]> = {
  'quickstart.ts': [/#3 allowed=true/, /#4 allowed=false/, /one second later alice: allowed=true/],
  'express.ts': [/#3 200/, /#4 429 .*retry-after: \d+/],
  // The README's first quick start: five admitted, the sixth of the burst refused.
  'quickstart/express.ts': [/#1 200 ratelimit: "default";r=4/, /#5 200 ratelimit: "default";r=0/, /#6 429/],
  'fastify.ts': [/#2 200/, /#3 429/, /health is exempt/, /#3 200 ratelimit: -/, /#1 200 ratelimit: "search"/, /#2 429/],
  'koa.ts': [/#2 200/, /#3 429/, /"beta" has its own budget/, /#1 200/],
  'hono.ts': [/#2 200/, /#1 429/],
  'node-http.ts': [/#2 200 ratelimit: "client";r=0/, /#3 429/, /skipped/, /#1 200 ratelimit: -/],
  'redis.ts': [/#1 allowed=true remaining=2 reason="ok"/, /#3 allowed=true remaining=0/, /#4 allowed=false/],
  'brute-force.ts': [
    /\(Redis\)/,
    /alice\/right: 200 welcome/,
    /blocked for 60 s/,
    /alice\/right: 429 blocked by user-ip \(retry-after: 60\)/,
    /bob\/right: 200 welcome/,
  ],
  'cluster.ts': [
    /2 workers, 40000 decisions: 1000 admitted of a limit of 1000/,
    /messages to the primary: \d+ \(0\.0\d\d a decision\)/,
  ],
  'overload.ts': [/t=1000 ms {2}limit=\d+ {2}baseline=2\d\.\d ms/, /goodput (9\d|100)% of capacity/],
  'waiting.ts': [
    /caller 1 admitted/,
    /caller 2 admitted/,
    /caller 3 admitted/,
    /caller 4 admitted/,
    /caller 5 admitted/,
    /gave up with WAIT_TIMEOUT/,
    /task 4 runs/,
    /at most 2 held at once/,
  ],
};

function assertInOrder(output: string, patterns: readonly RegExp[], example: string): void {
  let rest = output;
  for (const pattern of patterns) {
    const match = pattern.exec(rest);
    assert.ok(match, `${example} printed ${pattern} (after the earlier lines); it printed:\n${output}`);
    rest = rest.slice(match.index + match[0].length);
  }
}

describe('the examples', { timeout: 180_000 }, () => {
  let redis: RedisServers;
  before(async () => {
    redis = await startRedisServer();
  });
  after(() => redis?.stop());

  for (const [example, patterns] of Object.entries(EXPECTED)) {
    it(`${example} runs and prints what it says`, async () => {
      const env = { ...process.env, REDIS_URL: `redis://127.0.0.1:${redis.ports[0]}` };
      const args = ['--conditions=floodgate-source', '--import', 'tsx', `examples/${example}`];
      const { stdout } = await run(process.execPath, args, { cwd: ROOT, env, timeout: 30_000 });
      assertInOrder(stdout, patterns, example);
    });
  }
});
