// A node:http app with only @types/node installed: floodgate, floodgate/http and floodgate/http/node.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Limiter, tokenBucket } from 'floodgate';
import { byIp } from 'floodgate/http';
import { floodgateNode } from 'floodgate/http/node';

const limit = floodgateNode({
  limiter: new Limiter({ policy: tokenBucket({ capacity: 1, refillPerSecond: 0.001 }) }),
  key: byIp(),
});
const server = createServer((req, res) => limit(req, res, () => res.end('ok')));
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
const statuses: number[] = [];
for (let i = 0; i < 2; i++) statuses.push((await fetch(url)).status);
server.close();
console.log(JSON.stringify({ statuses }));
