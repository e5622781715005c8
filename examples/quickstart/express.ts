import express from 'express';
import type { AddressInfo } from 'node:net';
import { Limiter, tokenBucket } from 'floodgate';
import { byIp } from 'floodgate/http';
import { floodgateExpress } from 'floodgate/http/express';

// 5 requests at once per client address, then 1 a second: the 6th of a burst is refused with a 429.
const limiter = new Limiter({ policy: tokenBucket({ capacity: 5, refillPerSecond: 1 }) });
const app = express();
app.use(floodgateExpress({ limiter, key: byIp() }));
app.get('/', (_req, res) => void res.send('hello'));

const server = app.listen(0, '127.0.0.1', async () => {
  const { port } = server.address() as AddressInfo;
  for (let i = 1; i <= 6; i++) {
    const reply = await fetch(`http://127.0.0.1:${port}/`);
    console.log(`#${i} ${reply.status} ratelimit: ${reply.headers.get('ratelimit')}`);
  }
  server.close();
});
