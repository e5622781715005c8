// Express: a per-IP limit on the whole app, and a stricter one on /login by user name.
// Run: node --conditions=floodgate-source --import tsx examples/express.ts
import express from 'express';
import type { AddressInfo } from 'node:net';
import { fixedWindow, Limiter, tokenBucket } from 'floodgate';
import { byIp, byUser } from 'floodgate/http';
import { floodgateExpress } from 'floodgate/http/express';
import { sendRequests } from './support/requests.js';

const app = express();
app.use(
  floodgateExpress({
    limiter: new Limiter({ policy: tokenBucket({ capacity: 3, refillPerSecond: 0.1 }) }),
    key: byIp(),
  }),
);

const logins = new Limiter({ policy: fixedWindow({ limit: 1, windowMs: 60_000 }) });
const perUser = floodgateExpress({
  limiter: logins,
  name: 'login',
  key: byUser((req: express.Request) => req.query['user']?.toString()),
});
app.get('/login', perUser, (_req, res) => void res.send('welcome'));
app.get('/', (_req, res) => void res.send('hello'));

const server = app.listen(0, '127.0.0.1');
await new Promise<void>((resolve) => server.once('listening', resolve));
const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
console.log('Express, 3 at once then 1 every 10 s, per IP:');
await sendRequests(`${base}/`, 4);
server.close();
