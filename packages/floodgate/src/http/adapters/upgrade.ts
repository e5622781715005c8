/**
 * Upgrade requests (WebSocket) on node:http servers. A server with an `upgrade` listener hands
 * such requests to that listener instead of to the `request` handler, so no middleware sees them;
 * the guard here puts the gate in front of the listener.
 */
import { STATUS_CODES, type IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { HttpGate } from '../gate.js';
import { consoleLogger, type Logger } from '../logger.js';
import type { HttpLimitOptions } from '../options.js';
import { INTERNAL_PROBLEM, PROBLEM_CONTENT_TYPE } from '../problem.js';
import type { Verdict } from '../verdict.js';
import { NodeRequestView } from './node-request.js';

/** UpgradeListener is a node:http server's `upgrade` listener. */
export type UpgradeListener = (req: IncomingMessage, socket: Duplex, head: Buffer) => void;

/**
 * UpgradeGuard returns `listener` wrapped so that each upgrade request is decided first: an
 * admitted one goes on to `listener`, a refused one is answered on the socket (429 or 503 with the
 * problem body and headers a refused request gets) and the socket is closed.
 */
export type UpgradeGuard = (listener: UpgradeListener) => UpgradeListener;

/**
 * floodgateUpgrade returns an {@link UpgradeGuard} for any server on node:http (plain node,
 * Express, Koa, Fastify's `app.server`): upgrade requests are then limited like any other request.
 * Give it the same limiters as the middleware and both count against the same keys.
 * In identities and option functions `raw` is node's `IncomingMessage` (no framework has seen the
 * request), and `route` is the path. An admitted upgrade gets no rate-limit headers (the listener
 * writes the 101) and is never refunded.
 *
 * @example
 * server.on('upgrade', floodgateUpgrade({ limiter })((req, socket, head) => wss.handleUpgrade(req, socket, head, onConnection)));
 */
export function floodgateUpgrade(options: HttpLimitOptions<IncomingMessage>): UpgradeGuard {
  const gate = new HttpGate<IncomingMessage>(options);
  return guardUpgrades(
    gate,
    options.logger ?? consoleLogger,
    (req) => new NodeRequestView(req, gate.clientIp, req, undefined),
  );
}

/**
 * guardUpgrades returns the {@link UpgradeGuard} of an adapter's gate; `viewOf` makes the request
 * view an upgrade request is decided by.
 */
export function guardUpgrades<Req>(
  gate: HttpGate<Req>,
  logger: Logger,
  viewOf: (req: IncomingMessage) => NodeRequestView<Req>,
): UpgradeGuard {
  return function guard(listener) {
    return function floodgateUpgradeListener(req, socket, head) {
      const pass = (verdict: Verdict): void => {
        if (verdict.allowed) listener(req, socket, head);
        else answer(socket, verdict.statusCode, verdict.headers, verdict.body ?? '');
      };
      const fail = (err: unknown): void => {
        logger.warn('floodgate: deciding an upgrade request failed; it was answered 500', err);
        answer(socket, 500, [['content-type', PROBLEM_CONTENT_TYPE]], INTERNAL_PROBLEM);
      };
      try {
        const checked = gate.check(viewOf(req));
        if (checked instanceof Promise) checked.then(pass, fail);
        else pass(checked);
      } catch (err) {
        fail(err);
      }
    };
  };
}

/** Writes a whole HTTP/1.1 response on a socket that no server will answer on, then closes it. */
function answer(
  socket: Duplex,
  statusCode: number,
  headers: readonly (readonly [string, string])[],
  body: string,
): void {
  if (socket.destroyed || !socket.writable) {
    socket.destroy();
    return;
  }
  let head = `HTTP/1.1 ${statusCode} ${STATUS_CODES[statusCode] ?? ''}\r\n`;
  for (const [name, value] of headers) head += `${name}: ${value}\r\n`;
  head += `content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n`;
  socket.end(head + body);
}
