// Brute-force protection for a login route: a user at one IP is blocked after 3 wrong passwords
// in a row (1 minute, then 10, then an hour), and an IP after 20 failures of any user (a day).
// With REDIS_URL set, counts and blocks live in Redis and every process shares them.
// Run: node --conditions=floodgate-source --import tsx examples/brute-force.ts
import express from 'express';
import type { AddressInfo } from 'node:net';
import { Redis } from 'ioredis';
import { bruteForceGuard } from 'floodgate/http';
import { ioredisAdapter, RedisStore } from 'floodgate/redis';

const MIN = 60_000;
const redis = process.env['REDIS_URL'] === undefined ? undefined : new Redis(process.env['REDIS_URL']);
const run = `${process.pid}`; // keeps this run's keys apart from an earlier run's in a shared Redis

const guard = bruteForceGuard<{ ip: string; user: string }>({
  rules: [
    { name: 'ip', key: (a) => `${run}:${a.ip}`, maxFailures: 20, windowMs: 1440 * MIN, blockMs: 1440 * MIN },
    {
      name: 'user-ip',
      key: (a) => `${run}:${a.user}@${a.ip}`,
      maxFailures: 3,
      windowMs: 60 * MIN,
      blockMs: [MIN, 10 * MIN, 60 * MIN],
      resetOnSuccess: true,
    },
  ],
  ...(redis === undefined ? {} : { store: new RedisStore({ adapter: ioredisAdapter(redis) }) }),
});

const app = express();
app.post('/login', async (req, res) => {
  const attempt = { ip: req.ip ?? 'unknown', user: String(req.query['user']) };
  const before = await guard.check(attempt);
  if (!before.allowed) {
    res
      .status(429)
      .set('retry-after', String(Math.ceil(before.retryAfterMs / 1000)))
      .send(`blocked by ${before.blockedBy.join(', ')}`);
    return;
  }
  if (req.query['password'] === 'right') {
    await guard.succeeded(attempt);
    res.send('welcome');
    return;
  }
  const after = await guard.failed(attempt);
  res
    .status(401)
    .send(after.allowed ? 'wrong password' : `wrong password; blocked for ${Math.ceil(after.retryAfterMs / 1000)} s`);
});

const server = app.listen(0, '127.0.0.1');
await new Promise<void>((resolve) => server.once('listening', resolve));
const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
const login = async (user: string, password: string): Promise<void> => {
  const res = await fetch(`${base}/login?user=${user}&password=${password}`, { method: 'POST' });
  const retry = res.headers.get('retry-after');
  console.log(
    `  ${user}/${password}: ${res.status} ${await res.text()}${retry === null ? '' : ` (retry-after: ${retry})`}`,
  );
};
console.log(`Login with brute-force protection (${redis === undefined ? 'memory' : 'Redis'}):`);
await login('alice', 'wrong');
await login('alice', 'right');
console.log('a success starts the count over; three wrong in a row block alice here:');
for (let i = 0; i < 3; i++) await login('alice', 'wrong');
await login('alice', 'right');
console.log('bob, at the same address, is not blocked:');
await login('bob', 'right');
server.close();
redis?.disconnect();
