import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { SEMAPHORE_SCRIPT } from '../../src/redis.js';
import { useRedis } from '../redis/setup.js';

// The Redis semaphore's lease ends are on the server's clock. After a failover to a server whose
// clock is behind, a renewal computes an end earlier than the one stored; it must keep the later.
const get = useRedis();

async function run(key: string, ...args: Array<string | number>): Promise<unknown> {
  return get().client.eval(SEMAPHORE_SCRIPT.source, 1, key, ...args.map(String));
}

describe('Redis semaphore lease under a clock behind', () => {
  test('a renewal never moves a lease end back', async () => {
    const key = '{time-lease}:s';
    await run(key, 'acquire', 1, 60_000, 'holder');
    const granted = Number(await get().client.zscore(key, 'holder'));
    // A renewal whose now + leaseMs falls before the stored end: what a server 59 s behind computes.
    assert.equal(await run(key, 'renew', 1000, 'holder'), 1);
    assert.equal(Number(await get().client.zscore(key, 'holder')), granted);
    const [granted2, held, msUntilEnd] = (await run(key, 'acquire', 1, 1000, 'newcomer')) as number[];
    assert.deepEqual([granted2, held], [0, 1], 'the permit is still held');
    assert.ok(msUntilEnd! > 58_000, `the lease still ends about 60 s after the grant: ${msUntilEnd}`);
  });
});
