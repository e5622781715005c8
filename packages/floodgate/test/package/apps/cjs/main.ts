// A CommonJS app in TypeScript (compiled under node10 and node16 resolution): every subpath without a framework.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { FloodgateError, fixedWindow, Limiter, tokenBucket } from 'floodgate';
import { HttpGate } from 'floodgate/http';
import { floodgateNode } from 'floodgate/http/node';
import { RedisStore } from 'floodgate/redis';

async function main(): Promise<void> {
  let code = '';
  try {
    fixedWindow({ limit: -1, windowMs: 1000 });
  } catch (error) {
    if (error instanceof FloodgateError) code = error.code;
  }
  const limiter = new Limiter({ policy: tokenBucket({ capacity: 1, refillPerSecond: 0.001 }) });
  const limit = floodgateNode({ limiter });
  const server = createServer((req, res) => limit(req, res, () => res.end('ok')));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  const statuses: number[] = [];
  for (let i = 0; i < 2; i++) statuses.push((await fetch(url)).status);
  server.close();
  const kinds = [typeof HttpGate, typeof RedisStore];
  console.log(JSON.stringify({ statuses, code, kinds }));
}

void main();
