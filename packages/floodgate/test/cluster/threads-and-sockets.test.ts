/**
 * The cluster store's other links, on real threads and processes: worker threads through their
 * MessagePorts, and separate processes (as PM2's instances are) through a Unix socket to a host of
 * their own.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Worker } from 'node:worker_threads';
import { ClusterStoreHost, listenClusterHost, portChannel } from '../../src/cluster.js';

const run = promisify(execFile);
const fixture = (name: string): string => fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));

describe('the cluster store on worker threads and on a socket', { timeout: 120_000 }, () => {
  test('3 worker threads on one fixed window of 200: exactly 200', async () => {
    const host = new ClusterStoreHost();
    const workers = Array.from(
      { length: 3 },
      () =>
        new Worker(fixture('thread-entry.mjs'), {
          workerData: { limit: 200, asks: 2_000 },
          execArgv: ['--conditions=floodgate-source', '--import', 'tsx'],
        }),
    );
    for (const w of workers) host.attach(portChannel(w));
    const admitted = await Promise.all(
      workers.map(
        (w) =>
          new Promise<number>((resolve, reject) => {
            w.on('message', (m: { done?: boolean; admitted?: number }) => {
              if (m.done === true) resolve(m.admitted!);
            });
            w.on('error', reject);
          }),
      ),
    );
    await Promise.all(workers.map((w) => w.terminate()));
    host.close();
    assert.equal(
      admitted.reduce((a, b) => a + b, 0),
      200,
      `per thread: ${admitted.join(', ')}`,
    );
  });

  test('3 processes through a Unix socket to a host of their own (as PM2 instances): exactly 300', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'floodgate-cluster-sock-'));
    const path = join(dir, 'limits.sock');
    const host = new ClusterStoreHost();
    const server = await listenClusterHost(host, path);
    try {
      const outs = await Promise.all(
        Array.from({ length: 3 }, () =>
          run(
            process.execPath,
            ['--conditions=floodgate-source', '--import', 'tsx', fixture('socket-worker.ts'), path, '300', '1500'],
            { timeout: 60_000 },
          ),
        ),
      );
      const admitted = outs.map((o) => (JSON.parse(o.stdout.trim()) as { admitted: number }).admitted);
      assert.equal(
        admitted.reduce((a, b) => a + b, 0),
        300,
        `per process: ${admitted.join(', ')}`,
      );
      assert.ok(host.calls < 3 * 1500, `${host.calls} messages for 4,500 decisions`);
    } finally {
      await new Promise((r) => server.close(r));
      host.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
