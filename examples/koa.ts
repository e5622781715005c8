// Koa: a per-API-key limit, falling back to the client's address when no key is sent.
// Run: node --conditions=floodgate-source --import tsx examples/koa.ts
import Koa from 'koa';
import type { AddressInfo } from 'node:net';
import { gcra, Limiter } from 'floodgate';
import { byHeader, byIp, firstOf } from 'floodgate/http';
import { floodgateKoa } from 'floodgate/http/koa';
import { sendRequests } from './support/requests.js';

const app = new Koa();
const limiter = new Limiter({ policy: gcra({ rate: 1, periodMs: 10_000, maxBurst: 1 }) });
app.use(floodgateKoa({ limiter, key: firstOf(byHeader('x-api-key'), byIp()) }));
app.use((ctx) => void (ctx.body = 'hello'));

const server = app.listen(0, '127.0.0.1');
await new Promise<void>((resolve) => server.once('listening', resolve));
const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
console.log('Koa, GCRA 1 per 10 s with a burst of 1, key "alpha":');
await sendRequests(url, 3, { 'x-api-key': 'alpha' });
console.log('key "beta" has its own budget:');
await sendRequests(url, 1, { 'x-api-key': 'beta' });
server.close();
