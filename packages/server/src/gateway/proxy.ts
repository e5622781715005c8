/**
 * Forwarding to upstreams with undici: one keep-alive pool per upstream origin, bodies streamed
 * both ways (a request body is counted as it passes, never buffered), upstream failures answered
 * as 502 or 504 problem details.
 */
import { Readable, type Writable } from 'node:stream';
import type { HeaderPair } from 'floodgate/http';
import type { Dispatcher } from 'undici';
import { Pool } from '../undici-pool.js';
import { Deadlines, type Deadline, type Expiring } from './deadlines.js';
import { hasBody, isGone, writeHead, type ClientRequest, type ClientResponse } from './exchange.js';
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
 * CLIENT_GONE is the event a request emits when its client left before its response finished
 * (emitted by the exchange's close hook), for the waits that stop when it does.
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

/** UpstreamTimeoutError cuts off a request whose upstream sent no answer within `upstreamTimeoutMs` (undici's code for it). */
class UpstreamTimeoutError extends Error {
  override readonly name = 'UpstreamTimeoutError';
  readonly code = 'UND_ERR_HEADERS_TIMEOUT';

  constructor() {
    super('the upstream sent no answer within upstreamTimeoutMs');
  }
}

/** BodyTooLargeError ends a request body that grew past `maxBytes`. */
class BodyTooLargeError extends Error {
  override readonly name = 'BodyTooLargeError';

  constructor(readonly maxBytes: number) {
    super(`the request body passed ${maxBytes} bytes`);
  }
}

/** Upstreams holds one undici pool per upstream origin. */
export class Upstreams {
  private readonly pools = new Map<string, Pool>();
  /**
   * The pools by upstream URL (a route's, made once per config): a URL's `origin` is a new string
   * at each read, which the map of origins would then hash on every request.
   */
  private byUpstream = new WeakMap<URL, Pool>();
  /** The upstream's time to answer, to the millisecond (undici's own headers timeout ticks every 499 ms and stays as a backstop). */
  private readonly deadlines: Deadlines;

  constructor(private readonly limits: ProxyLimits) {
    this.deadlines = new Deadlines({ timeoutMs: limits.upstreamTimeoutMs });
  }

  /** poolOf returns the keep-alive pool of an upstream origin, made on first use. */
  poolOf(upstream: URL): Pool {
    const known = this.byUpstream.get(upstream);
    if (known !== undefined) return known;
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
    this.byUpstream.set(upstream, pool);
    return pool;
  }

  /** retain closes the pools of origins no longer in `origins`. */
  retain(origins: ReadonlySet<string>): void {
    this.byUpstream = new WeakMap();
    for (const [origin, pool] of this.pools) {
      if (origins.has(origin)) continue;
      this.pools.delete(origin);
      void pool.close().catch(() => {});
    }
  }

  /** close ends every pool and its connections (upgraded sockets included): call it once requests have drained. */
  async close(): Promise<void> {
    await Promise.allSettled([...this.pools.values()].map((p) => p.destroy()));
    this.deadlines.close();
    this.pools.clear();
    this.byUpstream = new WeakMap();
  }

  /**
   * forward sends `req` to `upstream` and streams the answer to `res` with `extra` headers added;
   * it never rejects: failures are answered (502, 504, 413) and reported in the result. It
   * settles once the exchange has closed (see {@link forwardClosed}) or failed; the upstream
   * request is cut off when the client leaves first.
   */
  forward(
    req: ClientRequest,
    res: ClientResponse,
    options: { upstream: URL; facts: ForwardingFacts; extra: readonly HeaderPair[] },
  ): Promise<UpstreamResult> {
    const started = performance.now();
    const maxBytes = this.limits.maxBodyBytes;
    if (Number(req.headers['content-length'] ?? 0) > maxBytes)
      return Promise.resolve(failed(res, new BodyTooLargeError(maxBytes), started));
    // A client that left while its request was decided (or waited) is not forwarded.
    if (isGone(res)) return Promise.resolve(clientLeft(res, 'before it was forwarded', started));
    const withBody = hasBody(req);
    // The client waits for a 100 before it sends the body: admitted, it may send it now. A refusal
    // answered before this point never asks for the body at all (RFC 9110, section 10.1.1).
    if (withBody && expectsContinue(req)) res.writeContinue();
    const request: Dispatcher.DispatchOptions = {
      path: pathOn(options.upstream, req.url ?? '/'),
      method: req.method as Dispatcher.HttpMethod,
      headers: upstreamHeaders(req.headers, options.facts),
      body: withBody ? Readable.from(countedBody(req, maxBytes), { objectMode: false }) : null,
    };
    const pool = this.poolOf(options.upstream);
    return new Promise((settle) => {
      const again = withBody || !IDEMPOTENT.has(request.method) ? undefined : pool;
      const forward = new Forward(res, options.extra, settle, request, again, this.deadlines);
      (res as { [FORWARD]?: Forward })[FORWARD] = forward;
      pool.dispatch(request, forward);
    });
  }
}

/** The methods RFC 9110 (section 9.2.2) lets a proxy send again after a connection failed: sent twice, they mean what once does. */
const IDEMPOTENT: ReadonlySet<string> = new Set(['GET', 'HEAD', 'OPTIONS', 'TRACE', 'PUT', 'DELETE']);

/**
 * The errors of a connection the upstream closed or reset under a request (undici's `other side
 * closed`, a reset, a write to a closed socket): most often a kept-alive connection the upstream
 * closed as the request arrived. Not a refused connection or a timeout, which a second try on the
 * same upstream would only repeat.
 */
const CONNECTION_LOST: ReadonlySet<string> = new Set(['UND_ERR_SOCKET', 'ECONNRESET', 'EPIPE']);

/** Why an upstream request is cut off by the gateway (undici hands the error back to the forward, which has settled by then). */
const CLIENT_LEFT = 'the client left before the answer ended';

/** The property an exchange's running forward is kept under on its response, for the exchange's close hook. */
const FORWARD = Symbol('floodgate.forward');

/**
 * forwardClosed tells the forward of a closed exchange, when it has one, how the exchange ended:
 * `answered` whole, or with its client gone first, whose upstream request is then cut off. The
 * exchange's close hook calls it; the forward settles then, unless it had failed already.
 */
export function forwardClosed(res: ClientResponse, answered: boolean): void {
  (res as { [FORWARD]?: Forward })[FORWARD]?.closed(answered);
}

/**
 * Forward is one request on its way to the upstream and back, as undici's dispatch handler: the
 * answer's head goes out with the gateway's fields, its body is streamed into the response as it
 * comes (undici pausing while the client reads slower). Undici's lowest API: no promise, stream,
 * async resource or listener of its own per request, the exchange's close hook telling it when
 * the answer went out whole or the client left. It settles once: with the upstream's status, the
 * client's leaving, or the failure answered for the upstream.
 */
class Forward implements Dispatcher.DispatchHandler, Expiring {
  private readonly started = performance.now();
  private status = 0;
  private abortUpstream: ((err: Error) => void) | undefined = undefined;
  private resume: (() => void) | undefined = undefined;
  private settled = false;
  private deadline: Deadline | undefined = undefined;

  /**
   * @param request - the request as dispatched.
   * @param again - the pool to send it once more, for an idempotent request without a body
   *   (undefined for the others): when the connection is lost before any answer came, it is sent
   *   again, once, as nginx's `proxy_next_upstream error` does.
   */
  constructor(
    private readonly res: ClientResponse,
    private readonly extra: readonly HeaderPair[],
    private readonly settle: (result: UpstreamResult) => void,
    private readonly request: Dispatcher.DispatchOptions,
    private again: Pool | undefined,
    private readonly deadlines: Deadlines,
  ) {}

  onConnect(abort: (err: Error) => void): void {
    // The client may have left while the request waited for a connection.
    if (this.settled) return abort(new Error(CLIENT_LEFT));
    this.abortUpstream = abort;
    // From here, as undici's headers timeout: the request runs on a connection (sent again: afresh).
    this.deadline?.cancel();
    this.deadline = this.deadlines.start(this);
  }

  /** expire cuts the request off: its upstream sent no answer within `upstreamTimeoutMs` (answered 504). */
  expire(): void {
    this.abortUpstream?.(new UpstreamTimeoutError());
  }

  onHeaders(statusCode: number, rawHeaders: Buffer[], resume: () => void): boolean {
    // An informational answer (100, 103) is not passed on.
    if (statusCode < 200) return true;
    this.deadline?.cancel();
    this.status = statusCode;
    this.resume = resume;
    const res = this.res;
    writeHead(res, statusCode, downstreamHeaders(rawHeaders, this.extra));
    // HTTP/2's response has no writableNeedDrain: it takes what it is given.
    return (res as { writableNeedDrain?: boolean }).writableNeedDrain !== true;
  }

  onData(chunk: Buffer): boolean {
    if ((this.res as Writable).write(chunk)) return true;
    this.res.once('drain', this.resume!);
    return false;
  }

  onComplete(): void {
    this.res.end();
  }

  onError(err: Error): void {
    if (this.settled) return;
    const again = this.again;
    if (again !== undefined && this.status === 0 && CONNECTION_LOST.has((err as { code?: string }).code ?? '')) {
      this.again = undefined;
      this.abortUpstream = undefined;
      again.dispatch(this.request, this);
      return;
    }
    this.finish(failed(this.res, err, this.started));
  }

  /** closed hears that the exchange closed: `answered` whole, or not (the client left). */
  closed(answered: boolean): void {
    if (this.settled) return;
    if (answered) {
      this.finish({
        status: this.status,
        durationMs: performance.now() - this.started,
        error: undefined,
        failure: undefined,
      });
      return;
    }
    this.finish(
      clientLeft(
        this.res,
        this.status === 0 ? 'before the upstream answered' : 'while the answer was sent',
        this.started,
      ),
    );
    this.abortUpstream?.(new Error(CLIENT_LEFT));
  }

  private finish(result: UpstreamResult): void {
    this.deadline?.cancel();
    this.settled = true;
    this.settle(result);
  }
}

/** The result of a forward that failed with `err`: answered with a problem (413, 502 or 504) while nothing was sent, else cut off. */
function failed(res: ClientResponse, err: unknown, started: number): UpstreamResult {
  const cause = (err as { cause?: unknown }).cause;
  const tooLarge = err instanceof BodyTooLargeError ? err : cause instanceof BodyTooLargeError ? cause : undefined;
  if (tooLarge !== undefined)
    return fail(res, {
      status: 413,
      detail: `the request body is larger than ${tooLarge.maxBytes} bytes`,
      started,
      failure: 'too-large',
    });
  const failure = failureOf(err, isGone(res));
  if (failure === 'aborted') return clientLeft(res, (err as { code?: string }).code ?? 'aborted', started);
  const code = (err as { code?: string }).code ?? '';
  const timeout = failure === 'timeout';
  const detail = timeout
    ? `the upstream did not answer within its timeout (${code})`
    : `the upstream failed: ${code || (err as Error).message}`;
  return fail(res, { status: timeout ? 504 : 502, detail, started, failure });
}

/** The result of a failure the gateway answers for: its problem sent while nothing was, else the connection cut. */
function fail(
  res: ClientResponse,
  o: { status: number; detail: string; started: number; failure: UpstreamFailure },
): UpstreamResult {
  if (!res.headersSent && !isGone(res)) {
    reply(res, problem(o.status, o.detail));
  } else {
    // The response had begun: the only honest signal left is to cut the connection.
    res.destroy();
  }
  return { status: o.status, durationMs: performance.now() - o.started, error: o.detail, failure: o.failure };
}

/**
 * CLIENT_CLOSED is the status counted for a request whose client left (or broke off its body)
 * before its answer ended: nginx's 499, never sent (there is nobody to send it to), so that a
 * client's failure is told apart from the upstream's 502 and 504 in metrics and logs.
 */
export const CLIENT_CLOSED = 499;

/** The result of a forward whose client left first (`note` says when, or undici's code): its connection is ended, nothing is answered. */
function clientLeft(res: ClientResponse, note: string, started: number): UpstreamResult {
  if (!isGone(res)) res.destroy();
  const error = `${CLIENT_LEFT} (${note})`;
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
    if (total > maxBytes) throw new BodyTooLargeError(maxBytes);
    yield chunk as Buffer;
  }
}
