/**
 * Forwarding to upstreams with undici: one keep-alive pool per upstream origin, bodies streamed
 * both ways (a request body is counted as it passes, never buffered), upstream failures answered
 * as 502 or 504 problem details.
 */
import { Readable } from 'node:stream';
import type { HeaderPair } from 'floodgate/http';
import { Pool } from '../undici-pool.js';
import { hasBody, isGone, type ClientRequest, type ClientResponse } from './exchange.js';
import { downstreamHeaders, upstreamHeaders, type ForwardingFacts } from './forwarding.js';
import { problem, reply } from './reply.js';

/** ProxyLimits are the proxy's timeouts and sizes. */
export interface ProxyLimits {
  readonly maxBodyBytes: number;
  readonly upstreamTimeoutMs: number;
  readonly connectTimeoutMs: number;
}

/** UpstreamResult is how one forwarded request ended, for metrics and logs. */
export interface UpstreamResult {
  /** The status sent to the client (the upstream's, or 502/504/413 from the gateway; 499, sent to nobody, when the client left first). */
  readonly status: number;
  /** Time from sending upstream to the end of the response, in ms. */
  readonly durationMs: number;
  /** What went wrong, when the gateway answered for the upstream. */
  readonly error: string | undefined;
  /** Why the upstream's answer did not reach the client whole; undefined when it did. */
  readonly failure: UpstreamFailure | undefined;
}

/**
 * UpstreamFailure is why a forwarded request did not end with the upstream's answer: `timeout`
 * (connecting, headers or body), `connect` (the connection was refused or could not be made),
 * `aborted` (the client left first), `too-large` (the client's body passed `maxBodyBytes`), or
 * `other` (the connection broke, the upstream answered nonsense).
 */
export type UpstreamFailure = 'timeout' | 'connect' | 'aborted' | 'too-large' | 'other';

/**
 * CLIENT_GONE is the event a request emits when its client left before its response finished:
 * undici listens for it on the request it forwards (the request is its abort signal).
 */
export const CLIENT_GONE = 'abort';

/** The error codes of a connection that could not be made. */
const CONNECT_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

/** BodyTooLargeError ends a request body that grew past `maxBodyBytes`. */
class BodyTooLargeError extends Error {
  override readonly name = 'BodyTooLargeError';
}

/** Upstreams holds one undici pool per upstream origin. */
export class Upstreams {
  private readonly pools = new Map<string, Pool>();

  constructor(private readonly limits: ProxyLimits) {}

  /** poolOf returns the keep-alive pool of an upstream origin, made on first use. */
  poolOf(upstream: URL): Pool {
    let pool = this.pools.get(upstream.origin);
    if (pool === undefined) {
      pool = new Pool(upstream.origin, {
        connections: 256,
        pipelining: 1,
        keepAliveTimeout: 4_000,
        headersTimeout: this.limits.upstreamTimeoutMs,
        bodyTimeout: this.limits.upstreamTimeoutMs,
        connectTimeout: this.limits.connectTimeoutMs,
      });
      this.pools.set(upstream.origin, pool);
    }
    return pool;
  }

  /** retain closes the pools of origins no longer in `origins`. */
  retain(origins: ReadonlySet<string>): void {
    for (const [origin, pool] of this.pools) {
      if (origins.has(origin)) continue;
      this.pools.delete(origin);
      void pool.close().catch(() => {});
    }
  }

  /** close ends every pool and its connections (upgraded sockets included): call it once requests have drained. */
  async close(): Promise<void> {
    await Promise.allSettled([...this.pools.values()].map((p) => p.destroy()));
    this.pools.clear();
  }

  /**
   * forward sends `req` to `upstream` and streams the answer to `res` with `extra` headers added;
   * it never rejects: failures are answered (502, 504, 413) and reported in the result. The
   * upstream request is cut off when `req` emits {@link CLIENT_GONE} (see `requestListener`).
   */
  async forward(
    req: ClientRequest,
    res: ClientResponse,
    options: { upstream: URL; facts: ForwardingFacts; extra: readonly HeaderPair[] },
  ): Promise<UpstreamResult> {
    const started = performance.now();
    const declared = Number(req.headers['content-length'] ?? 0);
    if (declared > this.limits.maxBodyBytes)
      return this.fail(
        res,
        413,
        `the request body is larger than ${this.limits.maxBodyBytes} bytes`,
        started,
        'too-large',
      );
    const withBody = hasBody(req);
    // The client waits for a 100 before it sends the body: admitted, it may send it now. A refusal
    // answered before this point never asks for the body at all (RFC 9110, section 10.1.1).
    if (withBody && expectsContinue(req)) res.writeContinue();
    let status = 0;
    try {
      // undici's stream API writes the upstream's body straight into `res`: no Readable in between.
      const request = {
        path: pathOn(options.upstream, req.url ?? '/'),
        method: req.method as 'GET',
        headers: upstreamHeaders(req.headers, options.facts),
        body: withBody ? Readable.from(countedBody(req, this.limits.maxBodyBytes), { objectMode: false }) : null,
        // The request itself is the signal: the exchange's one close hook emits CLIENT_GONE on it.
        signal: req,
      };
      await this.poolOf(options.upstream).stream(request, (reply) => {
        status = reply.statusCode;
        const headers = downstreamHeaders(reply.headers);
        const extra = options.extra;
        for (let i = 0; i < extra.length; i++) headers[extra[i]![0]] = extra[i]![1];
        res.writeHead(status, headers);
        return res;
      });
      return { status, durationMs: performance.now() - started, error: undefined, failure: undefined };
    } catch (err) {
      return this.failed(res, err, started);
    }
  }

  private failed(res: ClientResponse, err: unknown, started: number): UpstreamResult {
    const code = (err as { code?: string }).code ?? '';
    const cause = (err as { cause?: unknown }).cause;
    if (err instanceof BodyTooLargeError || cause instanceof BodyTooLargeError)
      return this.fail(
        res,
        413,
        `the request body is larger than ${this.limits.maxBodyBytes} bytes`,
        started,
        'too-large',
      );
    const failure = failureOf(err, isGone(res));
    if (failure === 'aborted') return clientLeft(res, err, started);
    const timeout = failure === 'timeout';
    const detail = timeout
      ? `the upstream did not answer within its timeout (${code})`
      : `the upstream failed: ${code || (err as Error).message}`;
    return this.fail(res, timeout ? 504 : 502, detail, started, failure);
  }

  private fail(
    res: ClientResponse,
    status: number,
    detail: string,
    started: number,
    failure: UpstreamFailure,
  ): UpstreamResult {
    if (!res.headersSent && !isGone(res)) {
      reply(res, problem(status, detail));
    } else {
      // The response had begun: the only honest signal left is to cut the connection.
      res.destroy();
    }
    return { status, durationMs: performance.now() - started, error: detail, failure };
  }
}

/**
 * CLIENT_CLOSED is the status counted for a request whose client left (or broke off its body)
 * before its answer ended: nginx's 499, never sent (there is nobody to send it to), so that a
 * client's failure is told apart from the upstream's 502 and 504 in metrics and logs.
 */
export const CLIENT_CLOSED = 499;

/** The result of a forward whose client left first: its connection is ended, nothing is answered. */
function clientLeft(res: ClientResponse, err: unknown, started: number): UpstreamResult {
  if (!isGone(res)) res.destroy();
  const code = (err as { code?: string }).code;
  const error = `the client left before the answer ended${code === undefined ? '' : ` (${code})`}`;
  return { status: CLIENT_CLOSED, durationMs: performance.now() - started, error, failure: 'aborted' };
}

/** expectsContinue tells whether a request waits for `100 Continue` before sending its body. */
export function expectsContinue(req: ClientRequest): boolean {
  const expect = req.headers.expect;
  return expect !== undefined && expect.toLowerCase() === '100-continue';
}

/** failureOf returns why a request to an upstream failed with `err` (`clientGone`: the client had left by then). */
export function failureOf(err: unknown, clientGone: boolean): UpstreamFailure {
  const code = (err as { code?: string }).code ?? '';
  if (code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_CONNECT_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT')
    return 'timeout';
  if (CONNECT_CODES.has(code)) return 'connect';
  return code === 'UND_ERR_ABORTED' || clientGone ? 'aborted' : 'other';
}

/** The request target on the upstream: the upstream URL's path prefix, then the client's target. */
function pathOn(upstream: URL, target: string): string {
  const base = upstream.pathname === '/' ? '' : upstream.pathname.replace(/\/$/, '');
  return base + (target.startsWith('/') ? target : '/' + target);
}

/** The request body as it arrives, failing once it passes `maxBytes`. */
async function* countedBody(req: ClientRequest, maxBytes: number): AsyncGenerator<Buffer> {
  let total = 0;
  for await (const chunk of req) {
    total += (chunk as Buffer).length;
    if (total > maxBytes) throw new BodyTooLargeError(`the request body passed ${maxBytes} bytes`);
    yield chunk as Buffer;
  }
}
