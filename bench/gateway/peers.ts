/**
 * The child processes of the gateway benchmark: the upstream, the undici peer and the Fastify
 * peer. Each prints `PORT <n>` once it listens.
 *
 *   node --import tsx bench/gateway/peers.ts --serve upstream|undici|fastify --upstream-port N
 *        [--capacity N --refill-per-second N]
 *
 * The upstream answers `200 ok` (2 bytes); on `/probe` it answers with the request headers it
 * received, as JSON, so the benchmark can show what each proxy sends upstream.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';
import { undiciPeer } from './undici-peer.js';

/**
 * fastifyPeer returns the listening port of @fastify/http-proxy behind @fastify/rate-limit: a fixed
 * window of `max` requests per `windowMs` per client IP (its default key, its in-memory LRU
 * store), the draft headers it knows (`RateLimit-Limit`, `-Remaining`, `-Reset`; `Retry-After`
 * and its own JSON error body on a 429), and the same four forwarding headers added to the
 * upstream request (`rewriteRequestHeaders`), which @fastify/reply-from does not add by itself.
 */
async function fastifyPeer(upstreamPort: number, max: number, windowMs: number): Promise<number> {
  const { default: Fastify } = await import('fastify');
  const app = Fastify();
  await app.register((await import('@fastify/rate-limit')).default, {
    max,
    timeWindow: windowMs,
    enableDraftSpec: true,
  });
  await app.register((await import('@fastify/http-proxy')).default, {
    upstream: `http://127.0.0.1:${upstreamPort}`,
    replyOptions: {
      rewriteRequestHeaders: (req, headers) => {
        const peer = req.ip;
        const host = req.headers.host;
        return {
          ...headers,
          'x-forwarded-for': peer,
          'x-forwarded-proto': 'http',
          ...(host === undefined ? {} : { 'x-forwarded-host': host }),
          forwarded: `for=${peer.includes(':') ? `"[${peer}]"` : peer}${host === undefined ? '' : `;host=${host.includes(':') ? `"${host}"` : host}`};proto=http`,
        };
      },
    },
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  return (app.server.address() as AddressInfo).port;
}

function upstream(): Server {
  const server = createServer((req, res) => {
    if (req.url === '/probe') {
      const body = JSON.stringify(req.rawHeaders);
      res
        .writeHead(200, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) })
        .end(body);
      return;
    }
    res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '2' }).end('ok');
  });
  // Idle connections are kept for 10 minutes (node's default is 5 s): a proxy run under callgrind
  // may leave one idle for seconds and reuse it as the upstream closes it, a 502 of no interest.
  server.keepAliveTimeout = 600_000;
  return server;
}

function listen(server: Server): Promise<number> {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));
}

const { values } = parseArgs({
  options: {
    serve: { type: 'string' },
    'upstream-port': { type: 'string' },
    capacity: { type: 'string', default: '0' },
    'refill-per-second': { type: 'string', default: '1' },
  },
});
const upstreamPort = Number(values['upstream-port'] ?? 0);
const capacity = Number(values.capacity);
const refillPerSecond = Number(values['refill-per-second']);
let port: number;
if (values.serve === 'upstream') port = await listen(upstream());
else if (values.serve === 'undici') port = await listen(undiciPeer({ upstreamPort, capacity, refillPerSecond }));
// The Fastify peer's fixed window: `capacity` requests per the time the bucket takes to fill.
else if (values.serve === 'fastify')
  port = await fastifyPeer(upstreamPort, capacity, Math.ceil((capacity / refillPerSecond) * 1000));
else throw new Error(`unknown --serve ${String(values.serve)}`);
console.log(`PORT ${port}`);
// Exit through process.exit on SIGTERM, so that `node --cpu-prof` writes its profile.
process.once('SIGTERM', () => process.exit(0));
