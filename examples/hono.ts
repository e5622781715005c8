// Hono on node (@hono/node-server): a limit per route and method, with the legacy headers too.
// Run: node --conditions=floodgate-source --import tsx examples/hono.ts
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import type { AddressInfo } from 'node:net';
import { Limiter, slidingWindowLog } from 'floodgate';
import { byRoute } from 'floodgate/http';
import { floodgateHono } from 'floodgate/http/hono';
import { sendRequests } from './support/requests.js';

const app = new Hono();
const perRoute = new Limiter({ policy: slidingWindowLog({ limit: 2, windowMs: 60_000 }) });
app.use('*', floodgateHono({ limiter: perRoute, key: byRoute(), legacyHeaders: true }));
app.get('/items/:id', (c) => c.json({ id: c.req.param('id') }));

const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' });
await new Promise<void>((resolve) => server.once('listening', resolve));
const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
console.log('Hono, 2 a minute for GET /items/:id, whatever the id:');
await sendRequests(`${base}/items/1`, 2);
await sendRequests(`${base}/items/2`, 1);
server.close();
