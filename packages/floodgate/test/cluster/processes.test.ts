/**
 * The cluster store on real processes: node's cluster module, workers asking at full speed on one
 * key, a worker killed with SIGKILL mid-run and replaced.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
const APP = fileURLToPath(new URL('./fixtures/cluster-app.ts', import.meta.url));

interface Outcome {
  admitted: number;
  decisions: number;
  messages: number;
  killed: number;
  admittedAtKill: number;
}

async function app(env: Record<string, string>): Promise<Outcome> {
  const { stdout } = await run(process.execPath, ['--conditions=floodgate-source', '--import', 'tsx', APP], {
    env: { ...process.env, ...env },
    timeout: 60_000,
  });
  return JSON.parse(stdout.trim().split('\n').at(-1)!) as Outcome;
}

describe('the cluster store across real processes', { timeout: 240_000 }, () => {
  test('2 workers at full speed on a fixed window of 100: exactly 100, every run', async () => {
    for (let round = 0; round < 3; round++) {
      const o = await app({ WORKERS: '2', RUN_MS: '800', LIMIT: '100' });
      assert.equal(o.admitted, 100, JSON.stringify(o));
      assert.ok(o.messages < o.decisions / 10, `${o.messages} messages for ${o.decisions} decisions`);
    }
  });

  test('a worker SIGKILLed mid-run and replaced: never above 100, and short only by the unit it may hold', async () => {
    for (let round = 0; round < 3; round++) {
      // Each worker asks every 4 ms: the limit takes about 200 ms to spend, and the kill lands in it.
      const o = await app({
        WORKERS: '2',
        RUN_MS: '1200',
        PACE_MS: '4',
        KILL_AT: String(20 + round * 25),
        LIMIT: '100',
      });
      assert.equal(o.killed, 1);
      assert.ok(o.admittedAtKill > 0 && o.admittedAtKill < 100, `the kill landed mid-run: ${JSON.stringify(o)}`);
      // A worker killed while it holds leased units takes them with it: they stay counted until the
      // window turns. At a limit of 100 the host lets at most 1 unit be out on leases (1%).
      assert.ok(o.admitted <= 100 && o.admitted >= 99, JSON.stringify(o));
    }
  });

  test('a token bucket of 1,000, 3 workers, one killed: within the stated bound (1% of the limit)', async () => {
    const o = await app({ WORKERS: '3', RUN_MS: '1500', PACE_MS: '1', KILL_AT: '300', POLICY: 'bucket' });
    assert.ok(o.admittedAtKill > 0 && o.admittedAtKill < 1_000, `the kill landed mid-run: ${JSON.stringify(o)}`);
    // A killed worker's leased units stay spent (a bucket refills them, this one at 1e-6/s): the
    // fleet admits at least the limit less what may be out on leases, and never above it plus that.
    assert.ok(o.admitted <= 1_010 && o.admitted >= 990, JSON.stringify(o));
  });
});
