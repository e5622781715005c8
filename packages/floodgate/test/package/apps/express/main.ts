// An Express app with only express and its @types installed.
import express from 'express';
import type { AddressInfo } from 'node:net';
import { Limiter, tokenBucket } from 'floodgate';
import { byIp } from 'floodgate/http';
import { floodgateExpress } from 'floodgate/http/express';

const app = express();
app.use(
  floodgateExpress({
    limiter: new Limiter({ policy: tokenBucket({ capacity: 1, refillPerSecond: 0.001 }) }),
    key: byIp(),
  }),
);
app.get('/', (_req, res) => void res.send('ok'));
const server = app.listen(0, '127.0.0.1');
await new Promise<void>((resolve) => server.once('listening', resolve));
const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
const statuses: number[] = [];
for (let i = 0; i < 2; i++) statuses.push((await fetch(url)).status);
server.close();
console.log(JSON.stringify({ statuses }));
