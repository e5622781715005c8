/**
 * The decision service's JSON API over node:http: `POST /json` shaped like Envoy's service's JSON
 * endpoint (its request, and a RateLimitResponse in proto3 JSON; 200 when OK, 429 when over
 * limit), `POST /v1/decide` (floodgate's own: one decision per descriptor, with a mode to ask
 * without counting and one to refund), `POST /v1/store` (a remote store, see store-api.ts),
 * `/v1/auth` (for nginx's `auth_request`, see auth-request.ts), `POST /v1/reserve` (a wait on a
 * smooth limit, see reserve.ts) and `GET /healthcheck`.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { authAnswer, INVALID_VALUE_ANSWER, readAuthRequest, type AuthAnswer } from './auth-request.js';
import { DecisionError, parseDecisionRequest } from './request.js';
import { parseReserveRequest } from './reserve.js';
import type { DecisionResult, RateLimitService, DescriptorStatus } from './service.js';
import { StoreApi } from './store-api.js';
import { traced } from './tracing.js';
import { FloodgateError } from 'floodgate';

/** MAX_BODY_BYTES is the largest request body read; a larger one is answered 413. */
export const MAX_BODY_BYTES = 64 * 1024;

/** durationText returns a proto3 JSON Duration, e.g. `"1.500s"`. */
function durationText(ms: number): string {
  const whole = Math.max(0, Math.floor(Number.isFinite(ms) ? ms : 4_294_967_295_000));
  const seconds = Math.floor(whole / 1000);
  const rest = whole % 1000;
  return rest === 0 ? `${seconds}s` : `${seconds}.${String(rest).padStart(3, '0')}s`;
}

function jsonStatus(s: DescriptorStatus): Record<string, unknown> {
  const out: Record<string, unknown> = { code: s.code };
  if (s.rule !== undefined && s.rule.unit !== undefined) {
    const limit: Record<string, unknown> = { requestsPerUnit: s.rule.requestsPerUnit, unit: s.rule.unit.toUpperCase() };
    if (s.rule.name !== undefined) limit.name = s.rule.name;
    out.currentLimit = limit;
  }
  // proto3 JSON leaves out fields at their default value.
  if (s.limitRemaining !== 0) out.limitRemaining = s.limitRemaining;
  if (s.durationUntilResetMs > 0) out.durationUntilReset = durationText(s.durationUntilResetMs);
  return out;
}

/** envoyJson returns `result` as Envoy's service writes a RateLimitResponse in JSON. */
export function envoyJson(result: DecisionResult): Record<string, unknown> {
  const out: Record<string, unknown> = { overallCode: result.overallCode, statuses: result.statuses.map(jsonStatus) };
  if (result.headers.length > 0) out.responseHeadersToAdd = result.headers.map(([key, value]) => ({ key, value }));
  return out;
}

/** decideJson returns `result` in floodgate's own shape (`POST /v1/decide`). */
export function decideJson(result: DecisionResult): Record<string, unknown> {
  return {
    allowed: result.overallCode === 'OK',
    overallCode: result.overallCode,
    decisions: result.statuses.map((s) => ({
      code: s.code,
      limit:
        s.rule === undefined
          ? null
          : {
              requestsPerUnit: s.rule.requestsPerUnit,
              unit: s.rule.unit ?? null,
              name: s.rule.name ?? null,
              shadowMode: s.rule.shadowMode,
            },
      remaining: s.limitRemaining,
      durationUntilResetMs: Number.isFinite(s.durationUntilResetMs) ? s.durationUntilResetMs : null,
      retryAfterMs:
        s.decision === undefined || Number.isFinite(s.decision.retryAfterMs) ? (s.decision?.retryAfterMs ?? 0) : null,
      shadowed: s.shadowed,
      reason: s.decision?.reason ?? (s.rule === undefined ? 'no-limit' : 'limit'),
    })),
    headers: Object.fromEntries(result.headers),
  };
}

function send(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function sendError(res: ServerResponse, status: number, code: string, message: string, field?: string): void {
  send(res, status, { error: { code, message, ...(field === undefined ? {} : { field }) } });
}

function readBody(req: IncomingMessage): Promise<string | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        resolve(undefined);
        req.resume();
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function failed(res: ServerResponse, error: unknown): void {
  if (error instanceof DecisionError) {
    sendError(res, error.code === 'INVALID_REQUEST' ? 400 : 503, error.code, error.message, error.field);
  } else if (error instanceof FloodgateError && error.code.startsWith('STORE_')) {
    sendError(res, 503, error.code, error.message);
  } else {
    sendError(res, 500, 'INTERNAL', `internal error: ${(error as Error)?.message ?? String(error)}`);
  }
}

async function handleDecision(
  service: RateLimitService,
  req: IncomingMessage,
  body: unknown,
  res: ServerResponse,
  tracing: boolean,
): Promise<void> {
  const path = (req.url ?? '/').split('?')[0]!;
  if (path === '/json') {
    const request = parseDecisionRequest(body, { strict: {} });
    const result = tracing
      ? await traced(
          request,
          (name) => headerText(req, name),
          'http',
          () => service.shouldRateLimit(request),
        )
      : await service.shouldRateLimit(request);
    send(res, result.overallCode === 'OK' ? 200 : 429, envoyJson(result));
    return;
  }
  const mode = (body as { mode?: unknown } | null)?.mode ?? 'consume';
  if (mode !== 'consume' && mode !== 'peek' && mode !== 'refund')
    throw new DecisionError(
      'INVALID_REQUEST',
      `mode is ${JSON.stringify(mode)}; expected consume, peek or refund`,
      'mode',
    );
  const request = parseDecisionRequest(body, { strict: { alsoAllowed: ['mode'] } });
  if (mode === 'refund') {
    await service.refund(request);
    send(res, 200, { refunded: true });
    return;
  }
  const decide = () => service.shouldRateLimit(request, mode);
  send(
    res,
    200,
    decideJson(await (tracing ? traced(request, (name) => headerText(req, name), 'http', decide) : decide())),
  );
}

/** handleAuth answers `/v1/auth` (any method; a body is read past) from the request's `Floodgate-*` headers. */
async function handleAuth(service: RateLimitService, req: IncomingMessage, res: ServerResponse): Promise<void> {
  req.resume();
  const asked = readAuthRequest(req.headersDistinct);
  let answer: AuthAnswer;
  if (asked.kind === 'invalid-value') answer = INVALID_VALUE_ANSWER;
  else answer = authAnswer(asked.request === undefined ? undefined : await service.shouldRateLimit(asked.request));
  res.writeHead(answer.status, [...answer.headers.flat(), 'content-length', '0']);
  res.end();
}

function headerText(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return typeof value === 'string' ? value : undefined;
}

/**
 * rateLimitHttpHandler returns a node:http request listener serving the JSON API of `service`.
 * Malformed requests are answered 400 with `{ error: { code, message, field } }`, a store
 * failure 503, a body over {@link MAX_BODY_BYTES} 413; nothing a client sends crashes it.
 *
 * @example
 * http.createServer(rateLimitHttpHandler(service)).listen(8080, '127.0.0.1');
 */
export function rateLimitHttpHandler(
  service: RateLimitService,
  options: { readonly tracing?: boolean } = {},
): (req: IncomingMessage, res: ServerResponse) => void {
  const tracing = options.tracing === true;
  const storeApi = new StoreApi(service);
  return (req, res) => {
    const path = (req.url ?? '/').split('?')[0]!;
    if (path === '/healthcheck') {
      const serving = service.health.serving;
      res.writeHead(serving ? 200 : 500, { 'content-type': 'text/plain' }).end(serving ? 'OK' : 'NOT_SERVING');
      return;
    }
    if (path === '/v1/auth') {
      handleAuth(service, req, res).catch((error: unknown) => failed(res, error));
      return;
    }
    if (path !== '/json' && path !== '/v1/decide' && path !== '/v1/store' && path !== '/v1/reserve')
      return sendError(
        res,
        404,
        'NOT_FOUND',
        `no such endpoint ${path}; use POST /json, POST /v1/decide, POST /v1/store, POST /v1/reserve, /v1/auth or GET /healthcheck`,
      );
    if (req.method !== 'POST') return sendError(res, 405, 'METHOD_NOT_ALLOWED', `${path} takes POST`);
    readBody(req).then(
      (text) => {
        if (text === undefined)
          return sendError(res, 413, 'BODY_TOO_LARGE', `the body is over ${MAX_BODY_BYTES} bytes`);
        let body: unknown;
        try {
          body = JSON.parse(text);
        } catch (error) {
          return sendError(res, 400, 'INVALID_REQUEST', `the body is not JSON: ${(error as Error).message}`);
        }
        if (path === '/v1/reserve') {
          Promise.resolve(body)
            .then((raw) => service.reservations.reserve(parseReserveRequest(raw)))
            .then(
              (answer) => send(res, 200, answer),
              (error: unknown) => failed(res, error),
            );
          return;
        }
        if (path === '/v1/store') {
          storeApi.handle(body).then(
            (answer) => send(res, 200, answer),
            (error: unknown) => failed(res, error),
          );
          return;
        }
        handleDecision(service, req, body, res, tracing).catch((error: unknown) => failed(res, error));
      },
      (error: unknown) => failed(res, error),
    );
  };
}
