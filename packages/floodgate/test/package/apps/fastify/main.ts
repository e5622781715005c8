// A Fastify app with only fastify installed.
import Fastify from 'fastify';
import { Limiter, tokenBucket } from 'floodgate';
import { floodgateFastify } from 'floodgate/http/fastify';

const app = Fastify();
await app.register(floodgateFastify, {
  limiter: new Limiter({ policy: tokenBucket({ capacity: 1, refillPerSecond: 0.001 }) }),
});
app.get('/', async () => 'ok');
const url = await app.listen({ port: 0, host: '127.0.0.1' });
const statuses: number[] = [];
for (let i = 0; i < 2; i++) statuses.push((await fetch(url)).status);
await app.close();
console.log(JSON.stringify({ statuses }));
