// A process for disconnect.test.ts: connects a Cluster client that refreshes its slots every 100 ms,
// says "ready", and on the line "plain" or "helper" on stdin disconnects that way, says
// "disconnected", and has nothing else to do: it should exit by itself.
import { createInterface } from 'node:readline';
import { Cluster } from 'ioredis';
import { disconnectIoredis } from '../../src/stores/redis/index.js';

const ports = (process.argv[2] ?? '').split(',').map(Number);
const client = new Cluster(
  ports.map((port) => ({ host: '127.0.0.1', port })),
  { slotsRefreshInterval: 100 },
);
client.on('error', () => {});
await client.set('disconnect-worker', '1');
process.stdout.write('ready\n');
const lines = createInterface({ input: process.stdin });
const how = await new Promise<string>((resolve) => lines.once('line', resolve));
lines.close();
process.stdin.destroy();
if (how === 'helper') await disconnectIoredis(client);
else client.disconnect();
process.stdout.write('disconnected\n');
