// A Hono app with only hono and @hono/node-server installed.
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import type { AddressInfo } from 'node:net';
import { Limiter, tokenBucket } from 'floodgate';
import { byHeader } from 'floodgate/http';
import { floodgateHono } from 'floodgate/http/hono';

const app = new Hono();
const limiter = new Limiter({ policy: tokenBucket({ capacity: 1, refillPerSecond: 0.001 }) });
app.use('*', floodgateHono({ limiter, key: byHeader('x-api-key') }));
app.get('/', (c) => c.text('ok'));
const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' });
await new Promise<void>((resolve) => server.once('listening', resolve));
const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
const statuses: number[] = [];
for (let i = 0; i < 2; i++) statuses.push((await fetch(url, { headers: { 'x-api-key': 'k1' } })).status);
server.close();
console.log(JSON.stringify({ statuses }));
