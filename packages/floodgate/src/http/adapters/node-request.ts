/**
 * What the adapters on node:http share (node, Express, Fastify, Koa): the request view over an
 * `IncomingMessage`, writing a verdict to a `ServerResponse`, and watching how a response ends.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { FloodgateError, describeValue } from '../../core/errors.js';
import type { ClientIpResolver } from '../client-ip.js';
import type { HttpGate } from '../gate.js';
import { RequestView } from '../request.js';
import { isListField, stackedValue } from '../headers.js';
import type { RateLimitInfo, Verdict } from '../verdict.js';

/**
 * NodeRequestView is the {@link RequestView} over a node `IncomingMessage`; `raw` is the
 * framework's object and `routeOf` reads its matched route pattern, when it has one.
 */
export class NodeRequestView<Req> extends RequestView<Req> {
  constructor(
    raw: Req,
    resolver: ClientIpResolver,
    private readonly message: IncomingMessage,
    private readonly routeOf: ((raw: Req) => string | undefined) | undefined,
  ) {
    super(raw, resolver);
  }

  get method(): string {
    return this.message.method ?? 'GET';
  }

  get path(): string {
    // Express strips a router's mount point from `url` and keeps the whole target in `originalUrl`.
    const original = (this.message as { originalUrl?: unknown }).originalUrl;
    return pathOf(typeof original === 'string' ? original : this.message.url);
  }

  get route(): string {
    return this.routeOf?.(this.raw) ?? pathOf(this.message.url);
  }

  header(name: string): string | undefined {
    const value = this.message.headers[name];
    return Array.isArray(value) ? value.join(', ') : value;
  }

  /**
   * Looks through the raw header list the parser made: node builds `message.headers` only when
   * something first reads it, and a request that nothing else asks about should not pay for that.
   */
  override hasHeader(name: string): boolean {
    return hasRawHeader(this.message.rawHeaders, name);
  }

  protected remoteAddress(): string | undefined {
    return peerAddress(this.message.socket);
  }
}

/** Each connection's peer address, read once: node's getter through `req.socket` took 24 ns here, this map 8 ns. */
const peers = new WeakMap<object, string>();

/** peerAddress returns a socket's peer address (cached per socket, which a connection never changes), or undefined when it has none. */
export function peerAddress(socket: { readonly remoteAddress?: string | undefined }): string | undefined {
  let address = peers.get(socket);
  if (address === undefined) {
    address = socket.remoteAddress;
    if (address !== undefined) peers.set(socket, address);
  }
  return address;
}

/** hasRawHeader tells whether node's raw header list (`[name, value, ...]`, names as sent) holds `name` (in lower case). */
export function hasRawHeader(rawHeaders: readonly string[], name: string): boolean {
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const n = rawHeaders[i]!;
    if (n.length === name.length && n.toLowerCase() === name) return true;
  }
  return false;
}

/** pathOf returns a request target's path, without its query string. */
export function pathOf(url: string | undefined): string {
  if (url === undefined) return '/';
  const q = url.indexOf('?');
  return q < 0 ? url : url.slice(0, q);
}

/** setHeaders sets a verdict's headers on `res`. */
export function setHeaders(res: ServerResponse, verdict: Verdict): void {
  for (const [name, value] of verdict.headers)
    res.setHeader(name, isListField(name) ? stackedValue(value, res.getHeader(name)) : value);
}

/** sendRefusal answers a refused verdict on `res`: its status, headers and problem body. */
export function sendRefusal(res: ServerResponse, verdict: Verdict): void {
  res.statusCode = verdict.statusCode;
  setHeaders(res, verdict);
  res.end(verdict.body);
}

/**
 * watchOutcome, when the gate refunds by outcome and the verdict charged something, reports to
 * the gate how `res` ended: its status once finished, or not completed when the connection closed
 * first.
 */
export function watchOutcome<Req>(
  gate: HttpGate<Req>,
  verdict: Verdict,
  res: ServerResponse,
  view: NodeRequestView<Req>,
): void {
  if (verdict.charges === undefined) return;
  res.once('close', () => gate.settle(verdict, { statusCode: res.statusCode, completed: res.writableFinished }, view));
}

/** refuseThrough hands a refusal to the `handler` option, the rate-limit headers set; what it throws goes to `next(err)`. */
function refuseThrough<Req>(
  handler: ConnectHandler<Req, ServerResponse>,
  verdict: Verdict,
  req: Req,
  res: ServerResponse,
  next: NodeNext,
): void {
  for (const [name, value] of verdict.headers)
    if (name !== 'content-type')
      res.setHeader(name, isListField(name) ? stackedValue(value, res.getHeader(name)) : value);
  try {
    handler(req, res, next, verdict);
  } catch (err) {
    next(err);
  }
}

/** checkHandler returns the `handler` option when it is a function or absent, else throws `INVALID_OPTION`. */
export function checkHandler<H>(handler: H | undefined): H | undefined {
  if (handler !== undefined && typeof handler !== 'function') {
    throw new FloodgateError(
      'INVALID_OPTION',
      `handler must be a function (req, res, next, info), got ${describeValue(handler)}`,
      'handler',
    );
  }
  return handler;
}

/** WithRateLimit is a request the Connect-style adapters (node:http, Express) have decided: its `rateLimit`. */
export interface WithRateLimit {
  /** The decision, for the handlers after the middleware (see {@link RateLimitInfo}). */
  rateLimit?: RateLimitInfo;
}

/** NodeNext is a Connect-style continuation: no argument to go on, an error to fail the request. */
export type NodeNext = (err?: unknown) => void;

/**
 * ConnectHandler is the `handler` option of the Connect-style adapters: it answers a refused
 * request itself (express-rate-limit's `handler`), with the rate-limit headers and `Retry-After`
 * already set on `res`; `info` holds the decisions and the status floodgate would have sent.
 */
export type ConnectHandler<Req, Res> = (req: Req, res: Res, next: NodeNext, info: RateLimitInfo) => void;

/**
 * runConnectStyle applies `gate` to one request Connect-style (node:http, Express): it sets the
 * headers and calls `next()` when admitted, answers 429/503 itself when refused (or hands the
 * refusal to `handler`), and passes errors to `next(err)`. A synchronous limiter decides without a promise.
 */
export function runConnectStyle<Req>(
  gate: HttpGate<Req>,
  view: NodeRequestView<Req>,
  res: ServerResponse,
  next: NodeNext,
  handler?: ConnectHandler<Req, ServerResponse>,
): void {
  let verdict: Verdict | Promise<Verdict>;
  try {
    verdict = gate.check(view);
  } catch (err) {
    next(err);
    return;
  }
  if (verdict instanceof Promise) {
    verdict.then((v) => applyConnectStyle(gate, v, view, res, next, handler), next);
  } else {
    applyConnectStyle(gate, verdict, view, res, next, handler);
  }
}

function applyConnectStyle<Req>(
  gate: HttpGate<Req>,
  verdict: Verdict,
  view: NodeRequestView<Req>,
  res: ServerResponse,
  next: NodeNext,
  handler: ConnectHandler<Req, ServerResponse> | undefined,
): void {
  (view.raw as WithRateLimit).rateLimit = verdict;
  if (!verdict.allowed) {
    if (handler === undefined || verdict.statusCode === 500) sendRefusal(res, verdict);
    else refuseThrough(handler, verdict, view.raw, res, next);
    return;
  }
  setHeaders(res, verdict);
  watchOutcome(gate, verdict, res, view);
  next();
}
