/**
 * An upstream that closes a kept-alive connection just as the gateway sends the next request on
 * it (an idle timeout that fires as the request arrives: the race every keep-alive proxy meets).
 * The request never reached the upstream's application, and nothing of an answer came back.
 * - An idempotent request without a body is sent again, once, on a new connection: the client
 *   gets the upstream's answer, not a 502.
 * - A POST is not: the upstream may have acted on it. The client gets the 502, and the upstream
 *   saw it once.
 */
import assert from 'node:assert/strict';
import { createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { startGateway, type GatewayProcess } from './support/gateway-process.js';
import { call } from './support/http.js';

/** Seen is a request line the upstream read, with the number of the connection it came on. */
interface Seen {
  readonly connection: number;
  readonly line: string;
}

/**
 * startClosingUpstream answers the first request of each connection (200, kept alive) and closes
 * the connection when the next one arrives on it, unanswered.
 */
async function startClosingUpstream(): Promise<{ server: Server; origin: string; seen: Seen[] }> {
  const seen: Seen[] = [];
  let connections = 0;
  const server = createServer((socket: Socket) => {
    const connection = ++connections;
    let buffered = '';
    let answered = false;
    socket.on('data', (chunk: Buffer) => {
      buffered += chunk.toString('latin1');
      const end = buffered.indexOf('\r\n\r\n');
      if (end < 0) return;
      seen.push({ connection, line: buffered.slice(0, buffered.indexOf('\r\n')) });
      const length = Number(/\r\ncontent-length: *(\d+)/i.exec(buffered.slice(0, end))?.[1] ?? 0);
      buffered = buffered.slice(end + 4 + length);
      if (answered) {
        socket.destroy();
        return;
      }
      answered = true;
      socket.write('HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: keep-alive\r\n\r\nok');
    });
    socket.on('error', () => {});
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

describe('an upstream that closes a kept-alive connection as the next request arrives', () => {
  let upstream: Awaited<ReturnType<typeof startClosingUpstream>>;
  let gw: GatewayProcess;

  before(async () => {
    upstream = await startClosingUpstream();
    gw = await startGateway(`
routes:
  - name: all
    match: { path: /* }
    upstream: ${upstream.origin}
`);
  });
  after(async () => {
    await gw?.stop();
    await new Promise<void>((resolve) => upstream?.server.close(() => resolve()));
  });

  it('sends an idempotent request without a body again on a new connection, and a POST not', async () => {
    assert.equal((await call(gw.url('/first'))).status, 200);
    // The pool's one connection is kept alive: the next request goes on it, and the upstream closes it.
    const again = await call(gw.url('/again'));
    assert.equal(again.status, 200, again.body);
    assert.deepEqual(
      upstream.seen.filter((s) => s.line.includes('/again')).map((s) => s.connection),
      [1, 2],
      'sent on the kept-alive connection, then once more on a new one',
    );
    // A request on a connection of its own, kept alive for the POST.
    assert.equal((await call(gw.url('/before-post'))).status, 200);
    const post = await call(gw.url('/post'), { method: 'POST', body: 'x' });
    assert.equal(post.status, 502, `a POST is not sent twice: ${JSON.stringify(upstream.seen)}`);
    assert.equal(upstream.seen.filter((s) => s.line.startsWith('POST /post')).length, 1);
    // The closed connections leave the pool working.
    assert.equal((await call(gw.url('/after'))).status, 200);
  });
});
