import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { after, before, test } from 'node:test';
import { startRedisCluster, type RedisServers } from '../support/redis-server.js';

// ioredis re-arms a Cluster's slot refresh timer when a refresh in flight at disconnect() ends, and
// the timer then re-arms itself forever: the process never exits (a gateway stopped while a node is
// down, a test file after a failover). disconnectIoredis waits for that refresh, then clears it.
const worker = fileURLToPath(new URL('./disconnect-worker.ts', import.meta.url));
const NODES = [0, 1, 2, 3, 4, 5];

let servers: RedisServers;

before(async () => {
  servers = await startRedisCluster();
});

after(() => servers.stop());

/** Resolves with the first line of `child`'s stdout that equals `line`; rejects if it exits first. */
function lineFrom(child: ChildProcess, line: string): Promise<void> {
  return new Promise((resolve, reject) => {
    let seen = '';
    const onData = (chunk: Buffer): void => {
      seen += chunk.toString();
      if (seen.split('\n').includes(line)) {
        child.stdout!.off('data', onData);
        resolve();
      }
    };
    child.stdout!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`the worker exited (${String(code)}) before "${line}": ${seen}`)));
  });
}

/**
 * Disconnects a worker's Cluster client `how` while every node is hung (SIGSTOP), so that a slot
 * refresh is in flight, then resumes the nodes and returns whether the worker exited by itself
 * within `exitWithinMs`.
 */
async function disconnectWhileRefreshing(how: 'plain' | 'helper', exitWithinMs: number): Promise<boolean> {
  const child = spawn(
    process.execPath,
    ['--conditions=floodgate-source', '--import', 'tsx', worker, servers.ports.slice(0, 3).join(',')],
    { stdio: ['pipe', 'pipe', 'inherit'] },
  );
  try {
    await lineFrom(child, 'ready');
    for (const node of NODES) servers.signal(node, 'SIGSTOP');
    await new Promise((resolve) => setTimeout(resolve, 500)); // a refresh starts within 100 ms and hangs
    const disconnected = lineFrom(child, 'disconnected');
    child.stdin!.end(`${how}\n`);
    try {
      await disconnected;
    } finally {
      for (const node of NODES) servers.signal(node, 'SIGCONT');
    }
    const exited = once(child, 'exit').then(() => true);
    const late = new Promise<false>((resolve) => setTimeout(() => resolve(false), exitWithinMs).unref());
    return await Promise.race([exited, late]);
  } finally {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
}

test('a plain disconnect during a slot refresh leaves a Cluster client that keeps its process alive', async () => {
  // The case the helper exists for. Should a later ioredis exit here, the helper is no longer needed.
  assert.equal(await disconnectWhileRefreshing('plain', 2000), false);
});

test('disconnectIoredis during a slot refresh leaves nothing open: the process exits by itself', async () => {
  assert.equal(await disconnectWhileRefreshing('helper', 10_000), true);
});
