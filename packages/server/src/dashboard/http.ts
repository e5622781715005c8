/**
 * The dashboard's endpoints on the admin listener: `/dashboard` (the page), `/dashboard/events`
 * (server-sent events, one snapshot a second) and `/dashboard/snapshot.json`, all behind the
 * admin token.
 */
import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { authorizedByToken, CHALLENGES } from './auth.js';
import { renderPage, renderUpdate } from './page.js';
import { snapshot, type DashboardSource } from './view.js';

/** DashboardEndpointsOptions configures {@link DashboardEndpoints}. */
export interface DashboardEndpointsOptions {
  readonly source: DashboardSource;
  /** The SHA-256 of the admin token (see `tokenDigest`). */
  readonly tokenDigest: Buffer;
  /** Time between two live updates, in ms (default 1,000). */
  readonly intervalMs?: number;
  /** Live streams open at once, at most (default 16); more are answered 503. */
  readonly maxStreams?: number;
}

/** A stream whose client has not read this much is too slow and is ended. */
const MAX_BUFFERED_BYTES = 1 << 20;

/**
 * DashboardEndpoints serves the dashboard. One timer (only while a stream is open) renders one
 * snapshot per interval and writes it to every open stream; a stream that stops reading is ended.
 *
 * @example
 * const dashboard = new DashboardEndpoints({ source, tokenDigest: tokenDigest(token) });
 * // in the admin handler:
 * if (url.pathname.startsWith('/dashboard')) return dashboard.serve(req, res, url.pathname);
 */
export class DashboardEndpoints {
  private readonly streams = new Set<ServerResponse>();
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly options: DashboardEndpointsOptions) {}

  /** serve answers one request to a `/dashboard` path. */
  serve(req: IncomingMessage, res: ServerResponse, pathname: string): void {
    if (!authorizedByToken(req, this.options.tokenDigest)) return refuse(res);
    if (req.method !== 'GET' && req.method !== 'HEAD') return plain(res, 405, 'use GET', { allow: 'GET, HEAD' });
    if (pathname === '/dashboard' || pathname === '/dashboard/') return this.page(res);
    if (pathname === '/dashboard/events') return this.stream(req, res);
    if (pathname === '/dashboard/snapshot.json')
      return send(res, 200, 'application/json', JSON.stringify(snapshot(this.options.source)));
    plain(res, 404, `no such dashboard endpoint: ${pathname}`);
  }

  /** close ends every live stream and stops the timer. */
  close(): void {
    for (const res of this.streams) res.end();
    this.streams.clear();
    this.stopTimer();
  }

  private page(res: ServerResponse): void {
    const nonce = randomBytes(16).toString('base64');
    const csp = `default-src 'none'; style-src 'nonce-${nonce}'; script-src 'nonce-${nonce}'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`;
    send(res, 200, 'text/html; charset=utf-8', renderPage(snapshot(this.options.source), nonce), {
      'content-security-policy': csp,
      'x-frame-options': 'DENY',
    });
  }

  private stream(req: IncomingMessage, res: ServerResponse): void {
    if (this.streams.size >= (this.options.maxStreams ?? 16))
      return plain(res, 503, 'too many dashboard streams are open', { 'retry-after': '5' });
    // Rendered before the head is sent, so that a failure can still be answered with a 500.
    const first = eventOf(renderUpdate(snapshot(this.options.source)));
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      'x-accel-buffering': 'no',
      'x-content-type-options': 'nosniff',
    });
    if (req.method === 'HEAD') return void res.end();
    res.write(`retry: 2000\n\n${first}`);
    this.streams.add(res);
    res.once('close', () => {
      this.streams.delete(res);
      if (this.streams.size === 0) this.stopTimer();
    });
    if (this.timer === undefined) {
      this.timer = setInterval(() => this.tick(), this.options.intervalMs ?? 1_000);
      this.timer.unref();
    }
  }

  private tick(): void {
    if (this.streams.size === 0) return this.stopTimer();
    let event: string;
    try {
      event = eventOf(renderUpdate(snapshot(this.options.source)));
    } catch {
      // A timer's exception would end the gateway; the viewers reconnect instead (and get a 500 if it persists).
      for (const res of this.streams) res.destroy();
      return;
    }
    for (const res of this.streams) {
      if (res.writableLength > MAX_BUFFERED_BYTES) res.destroy();
      else res.write(event);
    }
  }

  private stopTimer(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }
}

/** One server-sent event; `data` is JSON, which holds no raw newline. */
function eventOf(data: string): string {
  return `event: snapshot\ndata: ${data}\n\n`;
}

function refuse(res: ServerResponse): void {
  res.setHeader('www-authenticate', CHALLENGES);
  plain(
    res,
    401,
    'the dashboard needs the admin token: log in with any user name and the token as the password, or send Authorization: Bearer <token>',
  );
}

function plain(res: ServerResponse, status: number, text: string, headers: Record<string, string> = {}): void {
  send(res, status, 'text/plain; charset=utf-8', `${text}\n`, headers);
}

function send(
  res: ServerResponse,
  status: number,
  type: string,
  body: string,
  headers: Record<string, string> = {},
): void {
  res.writeHead(status, {
    'content-type': type,
    'cache-control': 'no-store',
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
    'content-length': String(Buffer.byteLength(body)),
    ...headers,
  });
  res.end(res.req.method === 'HEAD' ? undefined : body);
}
