/**
 * RateLimitClient: asks a remote floodgate decision service, over its JSON API (undici) or Envoy's
 * gRPC API, with the failure vocabulary of floodgate's stores: a deadline (`timeoutMs`, adaptive by
 * default), a circuit, typed `FloodgateError` codes, and `onError` deciding what a failure answers.
 */
import * as grpc from '@grpc/grpc-js';
import { FloodgateError } from 'floodgate';
import { Pool } from '../../undici-pool.js';
import { loadRateLimitService } from '../protocol/proto.js';
import { ServiceGuard, type ServiceGuardOptions } from './service-guard.js';
import { parseServiceUrl } from './service-url.js';

/** ClientOnError is what a failed call answers: reject (`throw`), admit (`fail-open`) or refuse (`fail-closed`). */
export type ClientOnError = 'throw' | 'fail-open' | 'fail-closed';

/**
 * RateLimitClientOptions configures a {@link RateLimitClient}. Besides these, the failure options of
 * every client of the service ({@link ServiceGuardOptions}): `timeoutMs` (adaptive by default: 5 ×
 * the recent p99 between 25 and 250 ms), `failuresToOpen` (3), `probeIntervalMs` (250), `clock`
 * and `timers`.
 */
export interface RateLimitClientOptions extends ServiceGuardOptions {
  /** The service: `http://host:port` for the JSON API, `grpc://host:port` for Envoy's gRPC API, `grpcs://host:port` for it over TLS. */
  url: string;
  /** For `grpcs://`: the CA to trust (default the system's), and a client certificate and key for mutual TLS (PEM). */
  tls?: { caPem?: string | Buffer; certPem?: string | Buffer; keyPem?: string | Buffer };
  /** What a failed, late or refused-by-the-circuit call answers (default `throw`); a malformed request always throws. */
  onError?: ClientOnError;
  /** HTTP connections kept to the service (default 8; JSON API only). */
  connections?: number;
}

/** ClientDescriptor is one descriptor to ask about: its entries, and optionally its own hits or limit. */
export interface ClientDescriptor {
  /** The entries in order, as `[key, value]` pairs or `{ key, value }` objects. */
  entries: ReadonlyArray<readonly [string, string] | { key: string; value: string }>;
  /** This descriptor's hits (0 asks without counting). */
  hitsAddend?: number;
  /** A limit replacing the configured one. */
  limit?: { requestsPerUnit: number; unit: 'SECOND' | 'MINUTE' | 'HOUR' | 'DAY' };
}

/** ClientRequest is one question: a domain and its descriptors. */
export interface ClientRequest {
  domain: string;
  descriptors: readonly ClientDescriptor[];
  /** Hits for descriptors without their own (default 1). */
  hitsAddend?: number;
}

/** ClientStatus is the service's answer for one descriptor. */
export interface ClientStatus {
  readonly code: 'OK' | 'OVER_LIMIT';
  readonly limit:
    { readonly requestsPerUnit: number; readonly unit: string; readonly name: string | undefined } | undefined;
  readonly remaining: number;
  readonly durationUntilResetMs: number;
}

/** ClientDecision is the answer to a request; `reason` says who decided (`fail-open`/`fail-closed`: `onError`). */
export interface ClientDecision {
  readonly allowed: boolean;
  readonly statuses: readonly ClientStatus[];
  readonly headers: ReadonlyArray<readonly [string, string]>;
  readonly reason: 'ok' | 'limit' | 'fail-open' | 'fail-closed';
}

type Raw = Record<string, unknown>;

function entriesOf(d: ClientDescriptor): Array<{ key: string; value: string }> {
  return d.entries.map((e) =>
    Array.isArray(e) ? { key: e[0] as string, value: e[1] as string } : (e as { key: string; value: string }),
  );
}

function secondsText(text: unknown): number {
  return typeof text === 'string' && /^\d+(\.\d+)?s$/.test(text) ? Math.round(Number(text.slice(0, -1)) * 1000) : 0;
}

function replyError(message: string): FloodgateError {
  return new FloodgateError('STORE_REPLY', `decision service: ${message}`);
}

/** decisionOf checks and maps a RateLimitResponse (proto names or proto3 JSON names). */
function decisionOf(raw: unknown, json: boolean): ClientDecision {
  const r = raw as Raw | null;
  const code = r?.[json ? 'overallCode' : 'overall_code'];
  const statuses = r?.statuses;
  if ((code !== 'OK' && code !== 'OVER_LIMIT') || !Array.isArray(statuses))
    throw replyError(
      `expected a RateLimitResponse with overall code OK or OVER_LIMIT, got ${JSON.stringify(raw)?.slice(0, 200)}`,
    );
  const headers = (
    (r?.[json ? 'responseHeadersToAdd' : 'response_headers_to_add'] ?? []) as Array<{ key: string; value: string }>
  ).map((h) => [h.key, h.value] as const);
  return {
    allowed: code === 'OK',
    statuses: statuses.map((s: Raw) => {
      const limit = s[json ? 'currentLimit' : 'current_limit'] as Raw | null | undefined;
      const duration = s[json ? 'durationUntilReset' : 'duration_until_reset'] as Raw | string | null | undefined;
      return {
        code: s.code === 'OVER_LIMIT' ? 'OVER_LIMIT' : 'OK',
        limit:
          limit == null
            ? undefined
            : {
                requestsPerUnit: Number(limit[json ? 'requestsPerUnit' : 'requests_per_unit'] ?? 0),
                unit: String(limit.unit),
                name: typeof limit.name === 'string' && limit.name !== '' ? limit.name : undefined,
              },
        remaining: Number(s[json ? 'limitRemaining' : 'limit_remaining'] ?? 0),
        durationUntilResetMs: json
          ? secondsText(duration)
          : duration == null
            ? 0
            : Number((duration as Raw).seconds) * 1000 + Math.round(Number((duration as Raw).nanos) / 1e6),
      };
    }),
    headers,
    reason: code === 'OK' ? 'ok' : 'limit',
  };
}

/** ClientReservation is a reservation on one of a domain's smooth limits (`POST /v1/reserve`). */
export interface ClientReservation {
  domain: string;
  /** The smooth limit's name in the domain's `smooth_limits`. */
  name: string;
  /** Whose limiter (default ""): each key has its own. */
  key?: string;
  /** A whole number of permits (default 1). */
  permits?: number;
  /** Reserve only a wait of at most this, in ms (Guava's `tryAcquire` timeout); left out: whatever the wait. */
  maxWaitMs?: number;
}

/**
 * ClientReservationAnswer is the service's answer: admitted with the wait in ms (whole µs) before
 * the permits may be used, or not (nothing reserved, `waitMs` null); `reason` says who decided
 * (`fail-open` admits with no wait, `fail-closed` refuses: `onError`).
 */
export interface ClientReservationAnswer {
  readonly admitted: boolean;
  readonly waitMs: number | null;
  readonly reason: 'ok' | 'limit' | 'fail-open' | 'fail-closed';
}

/** Transport sends one request and resolves to the decision, or rejects with a FloodgateError; `signal` cancels it. */
interface Transport {
  send(request: ClientRequest, signal: AbortSignal): Promise<ClientDecision>;
  /** reserve asks for a reservation; only the JSON API has it (undefined over gRPC). */
  readonly reserve: ((request: ClientReservation, signal: AbortSignal) => Promise<ClientReservationAnswer>) | undefined;
  close(): Promise<void>;
}

function reservationOf(body: unknown): ClientReservationAnswer {
  const b = body as { admitted?: unknown; waitMs?: unknown } | undefined;
  if (b?.admitted === true && typeof b.waitMs === 'number' && b.waitMs >= 0)
    return { admitted: true, waitMs: b.waitMs, reason: 'ok' };
  if (b?.admitted === false) return { admitted: false, waitMs: null, reason: 'limit' };
  throw replyError(`not a reservation: ${JSON.stringify(body).slice(0, 200)}`);
}

function jsonBody(request: ClientRequest): string {
  return JSON.stringify({
    domain: request.domain,
    hits_addend: request.hitsAddend,
    descriptors: request.descriptors.map((d) => ({
      entries: entriesOf(d),
      hits_addend: d.hitsAddend,
      limit: d.limit === undefined ? undefined : { requests_per_unit: d.limit.requestsPerUnit, unit: d.limit.unit },
    })),
  });
}

class HttpTransport implements Transport {
  private readonly pool: Pool;
  constructor(origin: string, connections: number) {
    this.pool = new Pool(origin, { connections, pipelining: 1 });
  }

  async send(request: ClientRequest, signal: AbortSignal): Promise<ClientDecision> {
    return decisionOf(await this.post('/json', jsonBody(request), signal), true);
  }

  readonly reserve = async (request: ClientReservation, signal: AbortSignal): Promise<ClientReservationAnswer> => {
    const { domain, name, key, permits, maxWaitMs } = request;
    return reservationOf(
      await this.post('/v1/reserve', JSON.stringify({ domain, name, key, permits, maxWaitMs }), signal),
    );
  };

  /** post sends `body` to `path` and resolves to the JSON of a 200 (or /json's 429), or rejects with a FloodgateError. */
  private async post(path: string, body: string, signal: AbortSignal): Promise<unknown> {
    try {
      const res = await this.pool.request({
        path,
        method: 'POST',
        body,
        headers: { 'content-type': 'application/json' },
        signal,
      });
      const text = await res.body.text();
      if (res.statusCode === 200 || (path === '/json' && res.statusCode === 429)) return parseJson(text);
      const error = (parseJson(text) as { error?: { message?: string; field?: string } } | undefined)?.error;
      if (res.statusCode === 400)
        throw new FloodgateError(
          'INVALID_OPTION',
          `decision service refused the request: ${error?.message ?? text}`,
          `request.${error?.field ?? ''}`,
        );
      throw new FloodgateError(
        res.statusCode >= 500 ? 'STORE_ERROR' : 'STORE_REPLY',
        `decision service answered HTTP ${res.statusCode}: ${error?.message ?? text.slice(0, 200)}`,
      );
    } catch (error) {
      throw typed(error);
    }
  }

  close(): Promise<void> {
    return this.pool.close();
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw replyError(`the body is not JSON: ${text.slice(0, 200)}`);
  }
}

/** typed returns a failure as a FloodgateError (a timeout is the guard's, not the transport's). */
function typed(error: unknown): FloodgateError {
  if (error instanceof FloodgateError) return error;
  const wrapped = new FloodgateError(
    'STORE_ERROR',
    `decision service call failed: ${(error as Error)?.message ?? String(error)}`,
  );
  wrapped.cause = error;
  return wrapped;
}

type RlsClient = grpc.Client & {
  ShouldRateLimit(
    req: unknown,
    options: grpc.CallOptions,
    cb: (e: grpc.ServiceError | null, r: unknown) => void,
  ): grpc.ClientUnaryCall;
};

function credentialsOf(secure: boolean, tls: RateLimitClientOptions['tls']): grpc.ChannelCredentials {
  if (!secure) return grpc.credentials.createInsecure();
  const pem = (v: string | Buffer | undefined) => (v === undefined ? null : Buffer.from(v));
  return grpc.credentials.createSsl(pem(tls?.caPem), pem(tls?.keyPem), pem(tls?.certPem));
}

class GrpcTransport implements Transport {
  private readonly client: RlsClient;
  readonly reserve = undefined;
  constructor(target: string, credentials: grpc.ChannelCredentials) {
    const Service = loadRateLimitService();
    this.client = new Service(target, credentials) as unknown as RlsClient;
  }

  send(request: ClientRequest, signal: AbortSignal): Promise<ClientDecision> {
    const message = {
      domain: request.domain,
      hits_addend: request.hitsAddend ?? 0,
      descriptors: request.descriptors.map((d) => ({
        entries: entriesOf(d),
        hits_addend: d.hitsAddend === undefined ? null : { value: String(d.hitsAddend) },
        limit: d.limit === undefined ? null : { requests_per_unit: d.limit.requestsPerUnit, unit: d.limit.unit },
      })),
    };
    return new Promise((resolve, reject) => {
      // No gRPC deadline: the guard cuts the call off at its own (adaptive) deadline, through `signal`.
      const call = this.client.ShouldRateLimit(message, {}, (error, response) => {
        signal.removeEventListener('abort', cancel);
        if (error === null) {
          try {
            resolve(decisionOf(response, false));
          } catch (e) {
            reject(e as Error);
          }
          return;
        }
        if (error.code === grpc.status.INVALID_ARGUMENT)
          reject(
            new FloodgateError('INVALID_OPTION', `decision service refused the request: ${error.details}`, 'request'),
          );
        else reject(typed(error));
      });
      const cancel = (): void => call.cancel();
      signal.addEventListener('abort', cancel, { once: true });
    });
  }

  close(): Promise<void> {
    this.client.close();
    return Promise.resolve();
  }
}

/**
 * RateLimitClient asks a floodgate decision service whether requests may pass. Failures are typed
 * as the library's stores type them: `STORE_TIMEOUT` past `timeoutMs` (adaptive by default: 5 ×
 * the p99 of the service's recent answers, between 25 and 250 ms; the HTTP request or gRPC call is
 * cancelled), `STORE_ERROR` when the service cannot be reached or cannot decide, `STORE_REPLY` for
 * an answer it cannot read. After `failuresToOpen` (3) failures in a row its circuit opens: calls
 * in flight are cut off, and calls fail at once without being sent until a probe, one every
 * `probeIntervalMs` (250 ms), is answered. With `onError: 'fail-open'` or `'fail-closed'` a failure
 * answers instead, saying so in `reason`. A request the service calls malformed always rejects
 * with `INVALID_OPTION`.
 *
 * @example
 * const client = new RateLimitClient({ url: 'grpc://127.0.0.1:8081', onError: 'fail-open' });
 * const decision = await client.shouldRateLimit({ domain: 'api', descriptors: [{ entries: [['user', userId]] }] });
 * if (!decision.allowed) reply(429);
 */
export class RateLimitClient {
  private readonly transport: Transport;
  private readonly guard: ServiceGuard;
  private readonly onError: ClientOnError;

  constructor(options: RateLimitClientOptions) {
    const url = parseServiceUrl(options?.url, {
      protocols: ['http:', 'https:', 'grpc:', 'grpcs:'],
      option: 'RateLimitClient.url',
      expected: 'http://host:port (JSON API), grpc://host:port (gRPC) or grpcs://host:port (gRPC over TLS)',
    });
    this.guard = new ServiceGuard(options, { where: 'RateLimitClient', service: `${url.protocol}//${url.host}` });
    this.onError = options.onError ?? 'throw';
    if (!['throw', 'fail-open', 'fail-closed'].includes(this.onError))
      throw new FloodgateError(
        'INVALID_OPTION',
        `RateLimitClient.onError must be throw, fail-open or fail-closed, got ${String(options.onError)}`,
        'RateLimitClient.onError',
      );
    this.transport =
      url.protocol === 'grpc:' || url.protocol === 'grpcs:'
        ? new GrpcTransport(url.host, credentialsOf(url.protocol === 'grpcs:', options.tls))
        : new HttpTransport(url.origin, options.connections ?? 8);
  }

  /** shouldRateLimit resolves to the service's decision for `request`, charging it when admitted. */
  async shouldRateLimit(request: ClientRequest): Promise<ClientDecision> {
    try {
      return await this.guard.run((signal) => this.transport.send(request, signal));
    } catch (error) {
      if (this.onError === 'throw' || !(error instanceof FloodgateError) || error.code === 'INVALID_OPTION')
        throw error;
      const statuses = request.descriptors.map((): ClientStatus => ({
        code: this.onError === 'fail-open' ? 'OK' : 'OVER_LIMIT',
        limit: undefined,
        remaining: 0,
        durationUntilResetMs: 0,
      }));
      return { allowed: this.onError === 'fail-open', statuses, headers: [], reason: this.onError };
    }
  }

  /**
   * reserve resolves to the service's answer to a reservation on one of a domain's smooth limits
   * (JSON API only: a `grpc://` client rejects with `INVALID_OPTION`). The caller waits `waitMs`
   * before using the permits. Failures are answered as {@link shouldRateLimit}'s: `fail-open`
   * admits with no wait, `fail-closed` refuses; a malformed request (or an unknown limit) always
   * rejects with `INVALID_OPTION`.
   *
   * @example
   * const r = await client.reserve({ domain: 'partners', name: 'partner-api', maxWaitMs: 2000 });
   * if (r.admitted) setTimeout(callPartner, r.waitMs);
   */
  async reserve(request: ClientReservation): Promise<ClientReservationAnswer> {
    const reserve = this.transport.reserve;
    if (reserve === undefined)
      throw new FloodgateError(
        'INVALID_OPTION',
        'RateLimitClient.reserve needs the JSON API: give the client an http:// url',
        'RateLimitClient.url',
      );
    try {
      return await this.guard.run((signal) => reserve(request, signal));
    } catch (error) {
      if (this.onError === 'throw' || !(error instanceof FloodgateError) || error.code === 'INVALID_OPTION')
        throw error;
      return this.onError === 'fail-open'
        ? { admitted: true, waitMs: 0, reason: 'fail-open' }
        : { admitted: false, waitMs: null, reason: 'fail-closed' };
    }
  }

  /** close ends the client's connections. */
  close(): Promise<void> {
    return this.transport.close();
  }
}
