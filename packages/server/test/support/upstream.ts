/** Test support: a real upstream on a free loopback port that records what it received. */
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** Received is one request as the upstream saw it. */
export interface Received {
  readonly method: string;
  readonly url: string;
  readonly headers: IncomingHttpHeaders;
  readonly bodyBytes: number;
}

/** TestUpstream is a running upstream. */
export interface TestUpstream {
  readonly port: number;
  readonly origin: string;
  readonly received: Received[];
  /** Requests whose response is held until `release()` (paths starting `/hold`). */
  release(): void;
  close(): Promise<void>;
}

/**
 * startUpstream starts an upstream on 127.0.0.1: `/hold...` waits for `release()`, `/never...` never
 * answers, `/status/<n>` answers n, anything else 200 with a JSON echo. WebSocket-style upgrades are
 * accepted and echoed byte for byte.
 */
export async function startUpstream(): Promise<TestUpstream> {
  const received: Received[] = [];
  let held: ServerResponse[] = [];
  const server: Server = createServer((req, res) => {
    let bodyBytes = 0;
    req.on('data', (c: Buffer) => (bodyBytes += c.length));
    req.on('end', () => {
      received.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, bodyBytes });
      const url = req.url ?? '/';
      if (url.startsWith('/never')) return;
      if (url.startsWith('/hold')) {
        held.push(res);
        return;
      }
      const status = /^\/status\/(\d{3})/.exec(url);
      const body = JSON.stringify({ url, bodyBytes });
      res.writeHead(status === null ? 200 : Number(status[1]), {
        'content-type': 'application/json',
        connection: 'keep-alive, x-upstream-hop',
        'x-upstream-hop': 'secret',
        'keep-alive': 'timeout=5',
      });
      res.end(body);
    });
  });
  const tunnels = new Set<import('node:stream').Duplex>();
  server.on('upgrade', (req, socket) => {
    tunnels.add(socket);
    socket.once('close', () => tunnels.delete(socket));
    received.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, bodyBytes: 0 });
    socket.write(
      'HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nconnection: Upgrade\r\nsec-websocket-accept: test\r\n\r\n',
    );
    socket.on('data', (chunk: Buffer) => socket.write(chunk));
    socket.on('error', () => socket.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    origin: `http://127.0.0.1:${port}`,
    received,
    release() {
      const all = held;
      held = [];
      for (const res of all) res.end('released');
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const res of held) res.destroy();
        for (const socket of tunnels) socket.destroy();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
