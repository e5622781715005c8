// Fastify: the plugin on every route, one route exempt, one with its own limit.
// Run: node --conditions=floodgate-source --import tsx examples/fastify.ts
import Fastify from 'fastify';
import { Limiter, slidingWindowLog, tokenBucket } from 'floodgate';
import { floodgateFastify } from 'floodgate/http/fastify';
import { sendRequests } from './support/requests.js';

const app = Fastify();
await app.register(floodgateFastify, {
  limiter: new Limiter({ policy: tokenBucket({ capacity: 2, refillPerSecond: 0.1 }) }),
});
const search = new Limiter({ policy: slidingWindowLog({ limit: 1, windowMs: 10_000 }) });
app.get('/health', { config: { rateLimit: false } }, async () => 'ok');
app.get('/search', { config: { rateLimit: { limiter: search, name: 'search' } } }, async () => ({ results: [] }));
app.get('/', async () => 'hello');

const url = await app.listen({ port: 0, host: '127.0.0.1' });
console.log('Fastify, 2 at once then 1 every 10 s:');
await sendRequests(`${url}/`, 3);
console.log('/health is exempt:');
await sendRequests(`${url}/health`, 3);
console.log('/search has its own limit, 1 per 10 s:');
await sendRequests(`${url}/search`, 2);
await app.close();
