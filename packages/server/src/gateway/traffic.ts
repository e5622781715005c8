/**
 * The traffic port's handlers: each request is matched to a route, admitted under its rules, let
 * through its overload guards (when it has any) and forwarded; each WebSocket upgrade likewise,
 * then piped both ways.
 */
import type { IncomingMessage } from 'node:http';
import { BlockList, isIPv4, isIPv6, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { ClientIpResolver, HeaderPair } from 'floodgate/http';
import type { Logger } from 'pino';
import type { GatewayMetrics } from '../ops/metrics.js';
import { entryOf, type AccessLog, type Decision } from '../ops/access-log.js';
import { admit, type Admission, type AdmitOptions } from './decide.js';
import { adoptAuthority, answered, isGone, type ClientRequest, type ClientResponse } from './exchange.js';
import type { DecisionReporter } from '../outcomes.js';
import { upstreamHeaders, type ForwardingFacts } from './forwarding.js';
import type { GuardStep } from './guards.js';
import { Passage, enter, type ShedReporter } from './protect.js';
import { refundFailed } from './refund.js';
import { CLIENT_GONE, failureOf, forwardClosed, type UpstreamResult, type Upstreams } from './proxy.js';
import { problem, reply, replyOnSocket } from './reply.js';
import { ProxyRequest } from './request.js';
import { PathRefusal, type CompiledRoute, type RouteMatch, type RouteTable } from './routes.js';
import type { UpstreamLog } from '../ops/upstream-log.js';

/** TrafficState is what the handlers read of the running gateway; `table` changes on reload. */
export interface TrafficState {
  readonly table: RouteTable;
  readonly resolver: ClientIpResolver;
  readonly upstreams: Upstreams;
  readonly metrics: GatewayMetrics;
  /** Where decisions are reported: the metrics, and the dashboard when it is on. */
  readonly reporter: DecisionReporter;
  readonly log: Logger;
  /** Where overload sheds are told: the metrics, and the dashboard's recent refusals. */
  readonly sheds: ShedReporter;
  /** Upstream outages in the log: a line when one begins, a count now and then, a line when it ends. */
  readonly upstreamLog: UpstreamLog;
  /** The access log, when on (a restart setting). */
  readonly accessLog: AccessLog | undefined;
  readonly onStoreError: 'fail-open' | 'fail-closed';
  /** isTrustedPeer tells whether a peer's forwarding headers are kept. */
  isTrustedPeer(peer: string): boolean;
  /** track keeps an upgraded socket until it closes, so that shutdown can end it. */
  track(socket: Duplex): void;
  /** requestStarted and requestEnded count the requests in flight (for draining). */
  requestStarted(): void;
  requestEnded(): void;
}

/**
 * requestListener returns the traffic server's `request` listener. Each exchange has one close
 * hook, made once here: it settles the exchange's forward (answered, or cut off when the client
 * left first), tells a wait that the client left (by emitting {@link CLIENT_GONE} on the
 * request), ends the request's count and its access line.
 */
export function requestListener(state: TrafficState): (req: ClientRequest, res: ClientResponse) => void {
  const access = state.accessLog;
  function closed(this: ClientResponse): void {
    const whole = answered(this);
    if (!whole) this.req.emit(CLIENT_GONE);
    forwardClosed(this, whole);
    state.requestEnded();
    access?.end(this, whole);
  }
  return (req, res) => {
    state.requestStarted();
    res.on('close', closed);
    access?.begin(req, res);
    try {
      serveRequest(state, req, res);
    } catch (err) {
      failedUnexpectedly(state, res, err);
    }
  };
}

/** Ends a request that failed in a way {@link serveRequest} does not answer: logged, and its connection cut (this request only). */
function failedUnexpectedly(state: TrafficState, res: ClientResponse, err: unknown): void {
  state.log.error({ error: (err as Error).message }, 'request failed unexpectedly');
  res.destroy();
}

/** trustedPeers returns the check of a `trustProxy` setting: any peer for a hop count, listed ones for a list. */
export function trustedPeers(trustProxy: false | number | readonly string[]): (peer: string) => boolean {
  if (trustProxy === false || trustProxy === 0) return () => false;
  if (typeof trustProxy === 'number') return () => true;
  const list = new BlockList();
  for (const entry of trustProxy) {
    const [address, bits] = entry.split('/') as [string, string | undefined];
    const type = isIPv6(address) ? 'ipv6' : 'ipv4';
    if (bits === undefined) list.addAddress(address, type);
    else list.addSubnet(address, Number(bits), type);
  }
  return (peer) => {
    const bare = peer.startsWith('::ffff:') && isIPv4(peer.slice(7)) ? peer.slice(7) : peer;
    return list.check(bare, isIPv6(bare) ? 'ipv6' : 'ipv4');
  };
}

/**
 * serveRequest answers one request on the traffic port. A request decided at once (a route on
 * the memory store) and refused is answered before it returns, with no promise made for it; the
 * rest goes on in promises that never reject. It throws only what it does not know to answer.
 */
export function serveRequest(state: TrafficState, req: ClientRequest, res: ClientResponse): void {
  const malformed = adoptAuthority(req);
  if (malformed !== undefined) {
    reply(res, problem(400, malformed));
    state.metrics.response('(none)', 400, undefined);
    return;
  }
  const match = matchOf(state.table, req);
  if (match === undefined) {
    reply(res, problem(404, `no route matches ${req.method ?? 'GET'} ${pathOf(req.url)}`));
    state.metrics.response('(none)', 404, undefined);
    note(state, res, undefined, 'unmatched', undefined);
    return;
  }
  // Told apart by a field only a refusal has: `instanceof` would walk the match's prototypes on every request.
  if ('detail' in match) {
    reply(res, problem(400, match.detail));
    state.metrics.response(match.route?.name ?? '(none)', 400, undefined);
    note(state, res, match.route?.name, 'bad-path', undefined);
    return;
  }
  // The upstream is sent the normal form the request was matched and counted on.
  if (match.target !== undefined) req.url = match.target;
  const admission = admitRequest(state, match, req, res);
  // A route on the memory store is decided at once: no await (and no turn of the microtask queue) for it.
  if (admission instanceof Promise) void admittedLater(state, match.route, req, res, admission);
  else proceed(state, match.route, req, res, admission);
}

/** The rest of {@link serveRequest} once a request's admission is decided: its refusal answered, or its forward. */
function proceed(
  state: TrafficState,
  route: CompiledRoute,
  req: ClientRequest,
  res: ClientResponse,
  admission: Admission | undefined,
): void {
  if (admission === undefined) return note(state, res, route.name, 'error', undefined);
  if (!admission.allowed) {
    reply(res, admission);
    state.metrics.response(route.name, admission.status, undefined);
    note(state, res, route.name, 'refused', admission);
    return;
  }
  note(state, res, route.name, admission.queued === true ? 'queued' : 'admitted', admission);
  if (route.guards === undefined) void forward(state, route, req, res, admission);
  else
    forwardGuarded(state, route, route.guards, req, res, admission).catch((err: unknown) =>
      failedUnexpectedly(state, res, err),
    );
}

/** {@link proceed} once an admission decided in a promise (a store on the network, a queue) is known. */
async function admittedLater(
  state: TrafficState,
  route: CompiledRoute,
  req: ClientRequest,
  res: ClientResponse,
  pending: Promise<Admission | undefined>,
): Promise<void> {
  try {
    proceed(state, route, req, res, await pending);
  } catch (err) {
    failedUnexpectedly(state, res, err);
  }
}

/** Forwards an admitted request to its route's upstream, and counts, refunds and logs how that ended. */
async function forward(
  state: TrafficState,
  route: CompiledRoute,
  req: ClientRequest,
  res: ClientResponse,
  admission: Admission,
): Promise<void> {
  try {
    const result = await state.upstreams.forward(req, res, {
      upstream: route.upstream,
      facts: factsOf(state, req),
      extra: admission.headers,
    });
    forwarded(state, route, result, admission, res);
  } catch (err) {
    failedUnexpectedly(state, res, err);
  }
}

/**
 * Forwards a request through its route's overload guards: refused at once (or once its wait for
 * a slot ends) without touching the upstream, or forwarded holding its slots, which go back
 * exactly once, with the upstream's outcome, when the response has ended or failed.
 */
async function forwardGuarded(
  state: TrafficState,
  route: CompiledRoute,
  steps: readonly GuardStep[],
  req: ClientRequest,
  res: ClientResponse,
  admission: Admission,
): Promise<void> {
  const entered = enter(steps, req.headers, {
    reporter: state.sheds,
    signal: waits(steps) ? goneSignal(req) : undefined,
    peerTrusted: state.isTrustedPeer(req.socket.remoteAddress ?? ''),
  });
  const passage = entered instanceof Promise ? await entered : entered;
  if (!(passage instanceof Passage)) {
    // A client that left while waiting for a slot gets no answer.
    if (!isGone(res)) reply(res, passage);
    state.metrics.response(route.name, passage.status, undefined);
    note(state, res, route.name, 'shed', undefined);
    return;
  }
  if (isGone(res)) {
    note(state, res, route.name, 'client-left', undefined);
    return passage.abandon();
  }
  let result: UpstreamResult;
  try {
    result = await state.upstreams.forward(req, res, {
      upstream: route.upstream,
      facts: factsOf(state, req),
      extra: admission.headers,
    });
  } catch (err) {
    // forward never rejects; were it to, the slots must still go back.
    passage.abandon();
    throw err;
  }
  passage.settle(result);
  forwarded(state, route, result, admission, res);
}

/** How an exchange whose forward failed ended, for the access log. */
const FAILURE_DECISIONS: Record<NonNullable<UpstreamResult['failure']>, Decision> = {
  timeout: 'upstream-failed',
  connect: 'upstream-failed',
  other: 'upstream-failed',
  aborted: 'client-left',
  'too-large': 'too-large',
};

/**
 * Notes how an exchange is ending in its access entry, when it is being logged: its route, its
 * decision, and the rules and key of its admission or refusal. An admitted exchange is then
 * forwarding: its line waits for the upstream's outcome.
 */
function note(
  state: TrafficState,
  res: ClientResponse,
  route: string | undefined,
  decision: Decision,
  admission: Admission | undefined,
): void {
  if (state.accessLog === undefined) return;
  const entry = entryOf(res);
  if (entry === undefined) return;
  entry.route = route;
  entry.decision = decision;
  const charges = admission === undefined ? undefined : admission.allowed ? admission.charged : admission.refusedBy;
  if (charges !== undefined && charges.length > 0) {
    entry.rules = charges.map((c) => c.rule.name);
    entry.key = charges[0]!.key;
  }
  entry.forwarding = decision === 'admitted' || decision === 'queued';
  // An exchange that closed while it waited (for a decision or a slot) gets its line now.
  if (!entry.forwarding && entry.closed) state.accessLog?.settled(res, entry);
}

function forwarded(
  state: TrafficState,
  route: CompiledRoute,
  result: UpstreamResult,
  admission: Admission,
  res: ClientResponse,
): void {
  state.metrics.response(route.name, result.status, result.durationMs);
  refundFailed(route, admission.charged, result, state);
  const entry = state.accessLog === undefined ? undefined : entryOf(res);
  if (entry !== undefined) {
    if (result.failure === undefined) entry.upstreamStatus = result.status;
    else entry.decision = FAILURE_DECISIONS[result.failure];
    state.accessLog?.settled(res, entry);
  }
  if (result.error === undefined) return state.upstreamLog.answered(route.upstream);
  // A client that left is the client's doing, not the upstream's: counted as 499, logged at debug.
  if (result.failure === 'aborted') state.log.debug({ route: route.name, error: result.error }, 'client left');
  else if (result.failure === 'too-large')
    state.log.debug({ route: route.name, error: result.error }, 'body too large');
  else state.upstreamLog.failed(route.upstream, { route: route.name, status: result.status, error: result.error });
}

function waits(steps: readonly GuardStep[]): boolean {
  for (const step of steps) if (step.guard.waits) return true;
  return false;
}

/** A signal that fires when the client of a request leaves before its answer (for waits only: most requests never wait). */
function goneSignal(req: ClientRequest): AbortSignal {
  const abort = new AbortController();
  req.once(CLIENT_GONE, () => abort.abort());
  return abort.signal;
}

/** A signal that fires when an upgraded socket closes. */
function closeSignal(socket: Duplex): AbortSignal {
  const abort = new AbortController();
  socket.once('close', () => abort.abort());
  return abort.signal;
}

/** The admission of a request, or undefined when deciding failed (already answered with 500); at once when {@link admit} is. */
function admitRequest(
  state: TrafficState,
  match: RouteMatch,
  req: ClientRequest,
  res: ClientResponse,
): Admission | undefined | Promise<Admission | undefined> {
  if (match.route.rules.length === 0 && match.route.smooth.length === 0) return PASS_THROUGH;
  const view = new ProxyRequest(req, state.resolver, match.route.name, match.params);
  const options = match.route.waits ? { ...unwaitingOptions(state), signal: goneSignal(req) } : unwaitingOptions(state);
  try {
    const admission = admit(match.route, view, options);
    return admission instanceof Promise
      ? admission.catch((err: unknown) => decideFailed(state, match, res, err))
      : admission;
  } catch (err) {
    return decideFailed(state, match, res, err);
  }
}

/** The options of the last admission that waits for nothing (see {@link unwaitingOptions}). */
let unwaiting: AdmitOptions | undefined;

/**
 * The options of an admission that waits for nothing (most): one object while the gateway's
 * reporter and store failure policy stay the ones it was made with, not one per request.
 */
function unwaitingOptions(state: TrafficState): AdmitOptions {
  const last = unwaiting;
  if (last !== undefined && last.reporter === state.reporter && last.onStoreError === state.onStoreError) return last;
  return (unwaiting = { reporter: state.reporter, onStoreError: state.onStoreError, signal: undefined });
}

/** Logs a request whose deciding failed and answers it with 500; returns undefined (no admission). */
function decideFailed(state: TrafficState, match: RouteMatch, res: ClientResponse, err: unknown): undefined {
  state.log.error({ route: match.route.name, err }, 'deciding a request failed');
  if (!res.headersSent) reply(res, problem(500, 'the gateway could not decide this request'));
  return undefined;
}

/**
 * serveUpgrade admits a WebSocket (or other) upgrade like a request, then pipes it to the upstream.
 * An upgrade holds its guards' slots until the upstream answers the handshake, not for the
 * tunnel's life: a long-lived socket does not take a slot from requests.
 */
export async function serveUpgrade(
  state: TrafficState,
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
): Promise<void> {
  socket.on('error', () => socket.destroy());
  state.track(socket);
  const match = matchOf(state.table, req);
  if (match === undefined)
    return replyOnSocket(socket, problem(404, `no route matches ${req.method ?? 'GET'} ${pathOf(req.url)}`));
  if (match instanceof PathRefusal) return replyOnSocket(socket, problem(400, match.detail));
  if (match.target !== undefined) req.url = match.target;
  const route = match.route;
  const view = new ProxyRequest(req, state.resolver, route.name, match.params);
  let admission: Admission;
  try {
    admission = await admit(route, view, {
      reporter: state.reporter,
      onStoreError: state.onStoreError,
      signal: undefined,
    });
  } catch {
    return replyOnSocket(socket, problem(500, 'the gateway could not decide this upgrade'));
  }
  let passage: Passage | undefined;
  if (admission.allowed && route.guards !== undefined) {
    const entered = await enter(route.guards, req.headers, {
      reporter: state.sheds,
      signal: waits(route.guards) ? closeSignal(socket) : undefined,
      peerTrusted: state.isTrustedPeer((socket as { remoteAddress?: string }).remoteAddress ?? ''),
    });
    if (entered instanceof Passage) passage = entered;
    else admission = entered;
  }
  state.metrics.response(route.name, admission.allowed ? 101 : admission.status, undefined);
  if (!admission.allowed) return replyOnSocket(socket, admission);
  const started = performance.now();
  try {
    await pipeUpgrade(state, route, req, socket, {
      head,
      extra: admission.headers,
      onAnswer: () =>
        passage?.settle({ status: 101, durationMs: performance.now() - started, error: undefined, failure: undefined }),
    });
  } catch (err) {
    const error = (err as Error).message;
    passage?.settle({
      status: 502,
      durationMs: performance.now() - started,
      error,
      failure: failureOf(err, socket.destroyed),
    });
    state.log.warn({ route: route.name, error }, 'upstream upgrade failed');
    replyOnSocket(socket, problem(502, 'the upstream refused or failed the upgrade'));
  }
}

/** Asks the upstream to upgrade, answers the client's handshake with its answer (calling `onAnswer`), and pipes both ways. */
async function pipeUpgrade(
  state: TrafficState,
  route: CompiledRoute,
  req: IncomingMessage,
  socket: Duplex,
  options: { head: Buffer; extra: readonly HeaderPair[]; onAnswer: () => void },
): Promise<void> {
  const up = await state.upstreams.poolOf(route.upstream).upgrade({
    path: req.url ?? '/',
    method: req.method ?? 'GET',
    headers: upstreamHeaders(req.headers, factsOf(state, req)),
    protocol: String(req.headers.upgrade ?? 'websocket'),
  });
  options.onAnswer();
  let text = 'HTTP/1.1 101 Switching Protocols\r\n';
  for (const [name, value] of Object.entries(up.headers))
    for (const v of [value ?? []].flat()) text += `${name}: ${v}\r\n`;
  for (const [name, value] of options.extra) text += `${name}: ${value}\r\n`;
  state.track(up.socket);
  socket.write(text + '\r\n');
  if (options.head.length > 0) up.socket.write(options.head);
  up.socket.on('error', () => socket.destroy());
  socket.on('close', () => up.socket.destroy());
  up.socket.on('close', () => socket.destroy());
  up.socket.pipe(socket);
  socket.pipe(up.socket);
}

/** The admission of a route without rules. */
const PASS_THROUGH: Admission = Object.freeze({ allowed: true, status: 0, headers: [], body: undefined });

function matchOf(table: RouteTable, req: ClientRequest): RouteMatch | PathRefusal | undefined {
  return table.find(req.headers.host, req.method ?? 'GET', req.url ?? '/');
}

/** The property a connection's forwarding facts are kept under on its socket (HTTP/1.x). */
const FACTS = Symbol('floodgate.facts');

/** The forwarding facts of the hop `req` came on: found once per HTTP/1.x connection (an HTTP/2 request's socket is a view per stream). */
function factsOf(state: TrafficState, req: ClientRequest): ForwardingFacts {
  if ('stream' in req) return hopFacts(state, req.socket);
  const socket = req.socket as Socket & { [FACTS]?: ForwardingFacts };
  return (socket[FACTS] ??= hopFacts(state, socket));
}

function hopFacts(
  state: TrafficState,
  socket: { remoteAddress?: string | undefined; encrypted?: boolean },
): ForwardingFacts {
  const peer = socket.remoteAddress ?? 'unknown';
  const proto = socket.encrypted === true ? 'https' : 'http';
  return { peer, proto, trusted: state.isTrustedPeer(peer), element: undefined };
}

function pathOf(url: string | undefined): string {
  if (url === undefined) return '/';
  const q = url.indexOf('?');
  return q < 0 ? url : url.slice(0, q);
}
