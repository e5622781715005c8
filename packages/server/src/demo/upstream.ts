/** The demo upstream `floodgate serve --demo-upstream` starts: a tiny JSON service to put the gateway in front of. */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * startDemoUpstream returns a listening server on `host:port` answering every request with a small
 * JSON document (its method, path and the time), and `/slow` after 2 s.
 *
 * @example
 * const upstream = await startDemoUpstream('127.0.0.1', 8081);
 */
export function startDemoUpstream(host: string, port: number): Promise<Server> {
  const server = createServer((req, res) => {
    const answer = (): void => {
      const body =
        JSON.stringify({
          hello: 'from the demo upstream',
          method: req.method,
          path: req.url,
          forwardedFor: req.headers['x-forwarded-for'] ?? null,
          at: new Date().toISOString(),
        }) + '\n';
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) });
      res.end(body);
    };
    req.resume();
    req.on('end', () => (req.url === '/slow' ? setTimeout(answer, 2_000) : answer()));
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve(server);
    });
  });
}

/** portOf returns a listening server's port. */
export function portOf(server: Server): number {
  return (server.address() as AddressInfo).port;
}
