/**
 * The traffic listener: plain HTTP/1.1, HTTPS, or HTTPS with HTTP/2 and HTTP/1.1 on one port
 * (chosen per connection by ALPN), behind one face for the gateway process: the same events,
 * the same limits, a certificate swapped in place on reload, and connections closed on shutdown.
 */
import { Server as HttpServer, createServer as createHttpServer, type IncomingMessage } from 'node:http';
import { createSecureServer, type Http2SecureServer, type Http2Session } from 'node:http2';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { SecureContextOptions } from 'node:tls';
import type { ListenConfig } from '../config/listen-schema.js';
import type { GatewayConfig } from '../config/schema.js';
import type { TlsMaterial } from '../config/tls-files.js';
import type { ClientRequest, ClientResponse } from '../gateway/exchange.js';

/** The most streams one HTTP/2 connection may have open at once (nginx's default is 128). */
const MAX_CONCURRENT_STREAMS = 128;

/** TrafficListenerOptions is what a {@link TrafficListener} is built from. */
export interface TrafficListenerOptions {
  readonly listen: ListenConfig;
  readonly limits: GatewayConfig['limits'];
  /** The certificate and key when `listen.tls` is set. */
  readonly tls: TlsMaterial | undefined;
}

/**
 * TrafficListener is the gateway's traffic port. With `listen.tls` it terminates TLS; with
 * `http2` (the default with TLS) an HTTP/2 client and an HTTP/1.1 client share the port. HTTP/2
 * requests arrive on the same `request` event through node's compatibility API; upgrades exist
 * only on HTTP/1.1 (an HTTP/2 request with `Upgrade` is malformed, and reset by the protocol layer).
 *
 * @example
 * const listener = new TrafficListener({ listen: config.listen, limits: config.limits, tls });
 * listener.on('request', (req, res) => res.end('hello'));
 * await listener.listen(8443, '127.0.0.1');
 */
export class TrafficListener {
  private readonly server: HttpServer | HttpsServer | Http2SecureServer;
  /** The HTTP/2 sessions open, so that shutdown can send each a GOAWAY. */
  private readonly sessions = new Set<Http2Session>();
  /** Every TLS connection of an HTTP/2 listener (node's Http2SecureServer keeps no list it lets us close). */
  private readonly sockets = new Set<Socket>();
  /** `http/1.1`, `https` or `h2+https`: what the listener speaks, for the log. */
  readonly protocols: string;

  constructor(options: TrafficListenerOptions) {
    const l = options.limits;
    const tls = options.tls;
    // Node checks the two timeouts on an interval (30 s by default): check often enough to honour them.
    const h1 = {
      maxHeaderSize: l.maxHeaderBytes,
      headersTimeout: l.headersTimeoutMs,
      requestTimeout: l.requestTimeoutMs,
      keepAliveTimeout: 5_000,
      connectionsCheckingInterval: Math.max(50, Math.min(1_000, l.headersTimeoutMs / 4)),
    };
    if (tls === undefined) {
      this.server = createHttpServer(h1);
      this.protocols = 'http/1.1';
    } else if (options.listen.http2 === false) {
      this.server = createHttpsServer({ ...h1, ...secureOptions(tls) });
      this.protocols = 'https';
    } else {
      const server = createSecureServer({
        ...secureOptions(tls),
        allowHTTP1: true,
        settings: { maxHeaderListSize: l.maxHeaderBytes, maxConcurrentStreams: MAX_CONCURRENT_STREAMS },
      });
      // The HTTP/1.1 connections of an HTTP/2 server are served by node:http's connection handler,
      // which reads these from the server object rather than from the options.
      Object.assign(server, h1);
      // An HTTP/2 connection quiet for this long is closed (the timeouts above are HTTP/1.1's).
      server.setTimeout(l.requestTimeoutMs);
      server.on('session', (session: Http2Session) => {
        this.sessions.add(session);
        session.once('close', () => this.sessions.delete(session));
      });
      server.on('secureConnection', (socket: Socket) => {
        this.sockets.add(socket);
        socket.once('close', () => this.sockets.delete(socket));
      });
      this.server = server;
      this.protocols = 'h2+https';
    }
  }

  /** on adds a handler of requests (and of requests that expect `100 Continue`), HTTP/1.1 upgrades, or HTTP/1.1 parser errors. */
  on(event: 'request' | 'checkContinue', listener: (req: ClientRequest, res: ClientResponse) => void): this;
  on(event: 'upgrade', listener: (req: IncomingMessage, socket: Duplex, head: Buffer) => void): this;
  on(event: 'clientError', listener: (err: NodeJS.ErrnoException, socket: Duplex) => void): this;
  on(event: string, listener: (...args: never[]) => void): this {
    this.server.on(event, listener as (...args: unknown[]) => void);
    return this;
  }

  /** listen resolves once the port is open, or rejects with why it could not be (in use, no permission). */
  listen(port: number, host: string): Promise<void> {
    const server = this.server;
    return new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => {
        server.off('error', reject);
        resolve();
      });
    });
  }

  /** port is the port listened on. */
  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  /** listening tells whether the port is open. */
  get listening(): boolean {
    return this.server.listening;
  }

  /**
   * setTls puts a new certificate and key in service for the connections that follow; those open
   * keep theirs. Whether clients must present a certificate is fixed at start.
   */
  setTls(tls: TlsMaterial): void {
    if (!('setSecureContext' in this.server)) return;
    this.server.setSecureContext(secureOptions(tls));
  }

  /** close stops accepting connections and resolves once every open one has closed. */
  close(): Promise<void> {
    return new Promise((resolve) => (this.server.listening ? this.server.close(() => resolve()) : resolve()));
  }

  /** closeIdleConnections closes the connections with no request under way; HTTP/2 ones are sent a GOAWAY and close once their streams end. */
  closeIdleConnections(): void {
    if (!isHttp2(this.server)) return this.server.closeIdleConnections();
    for (const session of this.sessions) session.close();
    // An HTTP/2 server tracks its HTTP/1.1 connections with node:http's own list: its method reads it.
    HttpServer.prototype.closeIdleConnections.call(this.server as unknown as HttpServer);
  }

  /** closeAllConnections ends every connection at once, requests under way included. */
  closeAllConnections(): void {
    if (!isHttp2(this.server)) return this.server.closeAllConnections();
    for (const socket of this.sockets) socket.destroy();
  }
}

/** The TLS options of a listener, and of a new secure context on reload. */
function secureOptions(tls: TlsMaterial): SecureContextOptions & { requestCert: boolean; rejectUnauthorized: boolean } {
  return {
    cert: tls.cert,
    key: tls.key,
    minVersion: tls.minVersion,
    ...(tls.ca === undefined ? {} : { ca: tls.ca }),
    requestCert: tls.ca !== undefined,
    rejectUnauthorized: tls.ca !== undefined,
  };
}

function isHttp2(server: HttpServer | HttpsServer | Http2SecureServer): server is Http2SecureServer {
  return 'updateSettings' in server;
}
