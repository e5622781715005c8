// A Redis app with only ioredis installed; REDIS_PORT names a test-started redis-server.
import { Redis } from 'ioredis';
import { gcra, Limiter } from 'floodgate';
import { ioredisAdapter, RedisStore } from 'floodgate/redis';

const client = new Redis({ host: '127.0.0.1', port: Number(process.env['REDIS_PORT']), lazyConnect: true });
await client.connect();
const store = new RedisStore({ adapter: ioredisAdapter(client), timeoutMs: 1000 });
const limiter = new Limiter({ policy: gcra({ rate: 1, periodMs: 60_000, maxBurst: 0 }), store });
const allowed: boolean[] = [];
for (let i = 0; i < 2; i++) allowed.push((await limiter.consume('pack-test')).allowed);
client.disconnect();
console.log(JSON.stringify({ allowed }));
