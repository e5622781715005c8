// A Koa app with only koa and its @types installed.
import Koa from 'koa';
import type { AddressInfo } from 'node:net';
import { Limiter, tokenBucket } from 'floodgate';
import { floodgateKoa } from 'floodgate/http/koa';

const app = new Koa();
app.use(floodgateKoa({ limiter: new Limiter({ policy: tokenBucket({ capacity: 1, refillPerSecond: 0.001 }) }) }));
app.use((ctx) => void (ctx.body = 'ok'));
const server = app.listen(0, '127.0.0.1');
await new Promise<void>((resolve) => server.once('listening', resolve));
const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
const statuses: number[] = [];
for (let i = 0; i < 2; i++) statuses.push((await fetch(url)).status);
server.close();
console.log(JSON.stringify({ statuses }));
