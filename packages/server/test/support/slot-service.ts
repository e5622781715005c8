/**
 * A test upstream run as its own process: `slots` requests served at once, each for `serviceMs`,
 * the rest waiting in an unbounded first-in, first-out line, like a thread-pool server. Its control
 * endpoint (`/__control`) reports what it saw and changes how it behaves:
 *
 * - `GET /__control`: `{ received, byPath, open, peakOpen, inService, queued }` (`open`: requests
 *   it holds, served or waiting; `peakOpen`: the most at once since the last reset);
 * - `POST /__control` with JSON `{ slots?, serviceMs?, errorStatus?, hang?, resetPeak? }`:
 *   `errorStatus` (a number, or null to recover) answers every request at once with that status;
 *   `hang: true` holds every request without an answer, and `hang: false` answers those held (200);
 *   `serviceMs` slows it down or speeds it up.
 *
 * Started by `slot-upstream.ts`; prints `{"port": N}` once listening on 127.0.0.1.
 *
 *   node --import tsx slot-service.ts --slots 2 --service-ms 50
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: { slots: { type: 'string', default: '4' }, 'service-ms': { type: 'string', default: '20' } },
});
const settings = {
  slots: Number(values.slots),
  serviceMs: Number(values['service-ms']),
  errorStatus: null as number | null,
  hang: false,
};
const stats = { received: 0, byPath: {} as Record<string, number>, open: 0, peakOpen: 0, inService: 0 };
const line: ServerResponse[] = [];
const held: ServerResponse[] = [];

function serveNext(): void {
  while (stats.inService < settings.slots && line.length > 0) {
    const res = line.shift()!;
    if (res.destroyed) continue;
    stats.inService++;
    setTimeout(() => {
      stats.inService--;
      if (!res.destroyed) res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
      serveNext();
    }, settings.serviceMs);
  }
}

function control(req: IncomingMessage, res: ServerResponse): void {
  let text = '';
  req.on('data', (c: Buffer) => (text += c.toString()));
  req.on('end', () => {
    if (req.method === 'POST') {
      const change = JSON.parse(text || '{}') as Partial<typeof settings> & { resetPeak?: boolean };
      if (change.slots !== undefined) settings.slots = change.slots;
      if (change.serviceMs !== undefined) settings.serviceMs = change.serviceMs;
      if (change.errorStatus !== undefined) settings.errorStatus = change.errorStatus;
      if (change.hang !== undefined) settings.hang = change.hang;
      if (change.hang === false)
        for (const r of held.splice(0))
          if (!r.destroyed) r.writeHead(200, { 'content-type': 'application/json' }).end('{"held":true}');
      if (change.resetPeak === true) stats.peakOpen = stats.open;
      serveNext();
    }
    res
      .writeHead(200, { 'content-type': 'application/json' })
      .end(JSON.stringify({ ...stats, queued: line.length, settings }));
  });
}

const server = createServer((req, res) => {
  const path = (req.url ?? '/').split('?')[0]!;
  if (path === '/__control') return control(req, res);
  req.resume();
  stats.received++;
  stats.byPath[path] = (stats.byPath[path] ?? 0) + 1;
  stats.open++;
  stats.peakOpen = Math.max(stats.peakOpen, stats.open);
  res.once('close', () => stats.open--);
  if (settings.hang) return void held.push(res);
  if (settings.errorStatus !== null)
    return void res.writeHead(settings.errorStatus, { 'content-type': 'text/plain' }).end('failing');
  line.push(res);
  serveNext();
});
server.keepAliveTimeout = 30_000;
server.listen(0, '127.0.0.1', () =>
  process.stdout.write(JSON.stringify({ port: (server.address() as AddressInfo).port }) + '\n'),
);
process.once('SIGTERM', () => {
  server.closeAllConnections();
  server.close(() => process.exit(0));
});
