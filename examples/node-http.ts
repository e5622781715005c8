// node:http: two dimensions (per client and for the whole server), costs, and a skipped path.
// Run: node --conditions=floodgate-source --import tsx examples/node-http.ts
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fixedWindow, Limiter, tokenBucket } from 'floodgate';
import { byFunction, byIp } from 'floodgate/http';
import { floodgateNode } from 'floodgate/http/node';
import { sendRequests } from './support/requests.js';

const limit = floodgateNode({
  dimensions: [
    {
      name: 'client',
      limiter: new Limiter({ policy: tokenBucket({ capacity: 4, refillPerSecond: 0.1 }) }),
      key: byIp(),
    },
    {
      name: 'server',
      limiter: new Limiter({ policy: fixedWindow({ limit: 100, windowMs: 1000 }) }),
      key: byFunction(() => 'all'),
    },
  ],
  cost: (req) => (req.route.startsWith('/report') ? 2 : 1),
  skip: (req) => req.route === '/health',
});
const server = createServer((req, res) => limit(req, res, () => res.end('hello')));
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
console.log('node:http, 4 at once per client; /report costs 2:');
await sendRequests(`${base}/report`, 3);
console.log('/health is skipped:');
await sendRequests(`${base}/health`, 1);
server.close();
