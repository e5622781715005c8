/**
 * RemoteStore: a floodgate decision service used as a library store. Each call is one
 * `POST /v1/store` to the service, which applies the policy the application gives to its own
 * store (memory or Redis).
 */
import {
  FAIL_CLOSED_RETRY_MS,
  FloodgateError,
  monotonicClock,
  notify,
  type Algorithm,
  type Clock,
  type Decision,
  type FailurePolicy,
  type Observer,
  type PolicyStore,
  type Store,
  type StoreConsumeAllResult,
  type StoreRequest,
} from 'floodgate';
import { Pool } from '../../undici-pool.js';
import { ServiceGuard, type ServiceGuardOptions } from './service-guard.js';
import { policySpecOf, type PolicySpec, type StoreOp } from '../protocol/policy-spec.js';
import { parseServiceUrl } from './service-url.js';

/**
 * RemoteStoreOptions configures a {@link RemoteStore}. Besides these, the failure options of
 * every client of the service ({@link ServiceGuardOptions}): `timeoutMs` (adaptive by default: 5 ×
 * the recent p99 between 25 and 250 ms), `failuresToOpen` (3), `probeIntervalMs` (250), `clock`
 * and `timers` (pass one `ManualClock` as both in tests).
 */
export interface RemoteStoreOptions extends ServiceGuardOptions {
  /** The decision service's JSON API, `http://host:port`. */
  url: string;
  /** What a failed, late or refused-by-the-circuit call answers (default `throw`); bad input always rejects. */
  onError?: FailurePolicy;
  /** HTTP connections kept to the service (default 8). */
  connections?: number;
  /** Receives a `storeError` event per failed call and a `circuit` event per change of the circuit. */
  observer?: Observer;
}

interface Settings {
  readonly pool: Pool;
  readonly guard: ServiceGuard;
  readonly onError: FailurePolicy;
  readonly clock: Clock;
  readonly observer: Observer | undefined;
}

type Raw = Record<string, unknown>;

function replyError(message: string): FloodgateError {
  return new FloodgateError('STORE_REPLY', `RemoteStore: ${message}`);
}

/** decisionOf checks the service's decision; anything else is `STORE_REPLY`. */
function decisionOf(raw: unknown): Decision {
  const d = (raw as { decision?: Raw } | null)?.decision;
  const reasons = ['ok', 'limit', 'store-full', 'fail-open', 'fail-closed', 'fallback'];
  const number = (v: unknown): boolean => typeof v === 'number' && Number.isFinite(v);
  if (
    typeof d !== 'object' ||
    d === null ||
    typeof d.allowed !== 'boolean' ||
    !number(d.limit) ||
    !number(d.remaining) ||
    !reasons.includes(d.reason as string)
  ) {
    throw replyError(
      `expected { decision: { allowed, limit, remaining, retryAfterMs, resetMs, reason } }, got ${JSON.stringify(raw)?.slice(0, 200)}`,
    );
  }
  const wait = (v: unknown): number => (v === null ? Infinity : number(v) ? (v as number) : 0);
  return {
    allowed: d.allowed,
    limit: d.limit as number,
    remaining: d.remaining as number,
    retryAfterMs: wait(d.retryAfterMs),
    resetMs: wait(d.resetMs),
    reason: d.reason as Decision['reason'],
  };
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw replyError(`the body is not JSON: ${text.slice(0, 200)}`);
  }
}

/** refusal returns the typed error of a 4xx/5xx answer: bad input keeps its field, the rest are store failures. */
function refusal(status: number, text: string): FloodgateError {
  const error = (parseJson(text) as { error?: { code?: string; message?: string; field?: string } } | undefined)?.error;
  const message = error?.message ?? text.slice(0, 200);
  if (status === 400) {
    const field = error?.field ?? 'request';
    return new FloodgateError(
      field === 'cost' ? 'INVALID_COST' : 'INVALID_OPTION',
      `RemoteStore: the service refused the request: ${message}`,
      `RemoteStore.${field}`,
    );
  }
  const code = error?.code === 'STORE_TIMEOUT' ? 'STORE_TIMEOUT' : status >= 500 ? 'STORE_ERROR' : 'STORE_REPLY';
  return new FloodgateError(code, `RemoteStore: the service answered HTTP ${status}: ${message}`);
}

/** post sends one store request through the guard (deadline and circuit) and resolves to its parsed body, or rejects typed. */
function post(settings: Settings, request: Record<string, unknown>): Promise<unknown> {
  const body = JSON.stringify(request);
  return settings.guard.run(async (signal) => {
    try {
      const res = await settings.pool.request({
        path: '/v1/store',
        method: 'POST',
        body,
        headers: { 'content-type': 'application/json' },
        signal,
      });
      const text = await res.body.text();
      if (res.statusCode !== 200) throw refusal(res.statusCode, text);
      return parseJson(text);
    } catch (error) {
      if (error instanceof FloodgateError) throw error;
      const wrapped = new FloodgateError(
        'STORE_ERROR',
        `RemoteStore: the call failed: ${(error as Error)?.message ?? String(error)}`,
      );
      wrapped.cause = error;
      throw wrapped;
    }
  });
}

/** resultOf checks the service's answer to `consumeAll`; anything else is `STORE_REPLY`. */
function resultOf(raw: unknown, count: number): StoreConsumeAllResult {
  const r = raw as { allowed?: unknown; decisions?: unknown } | null;
  if (typeof r?.allowed !== 'boolean' || !Array.isArray(r.decisions) || r.decisions.length !== count) {
    throw replyError(
      `expected { allowed, decisions } with ${count} decisions, got ${JSON.stringify(raw)?.slice(0, 200)}`,
    );
  }
  return { allowed: r.allowed, decisions: r.decisions.map((decision: unknown) => decisionOf({ decision })) };
}

const INPUT_CODES = new Set(['INVALID_OPTION', 'INVALID_COST', 'COST_EXCEEDS_LIMIT', 'INVALID_KEY']);

/** RemotePolicyStore is one policy's table on a remote service; see {@link RemoteStore}. */
class RemotePolicyStore implements PolicyStore {
  readonly synchronous = false;
  readonly ownsClock = true;
  readonly decidesFailures = true;
  private readonly spec: PolicySpec;
  private readonly open: Decision;
  private readonly closed: Decision;

  constructor(
    policy: Algorithm,
    private readonly settings: Settings,
  ) {
    this.spec = policySpecOf(policy);
    this.open = Object.freeze({
      allowed: true,
      limit: policy.limit,
      remaining: 0,
      retryAfterMs: 0,
      resetMs: 0,
      reason: 'fail-open',
    });
    this.closed = Object.freeze({
      allowed: false,
      limit: policy.limit,
      remaining: 0,
      retryAfterMs: FAIL_CLOSED_RETRY_MS,
      resetMs: 0,
      reason: 'fail-closed',
    });
  }

  consume(key: string, cost: number): Promise<Decision> {
    return this.call('consume', key, cost).then(decisionOf, (error: unknown) =>
      this.failed(error, (p) => (p === 'fail-open' ? this.open : this.closed)),
    );
  }

  peek(key: string, cost: number): Promise<Decision> {
    return this.call('peek', key, cost).then(decisionOf, (error: unknown) =>
      this.failed(error, (p) => (p === 'fail-open' ? this.open : this.closed)),
    );
  }

  refund(key: string, cost: number): Promise<void> {
    return this.call('refund', key, cost).then(
      () => undefined,
      (error: unknown) => this.failed(error, () => undefined),
    );
  }

  /** reset rejects when the service fails, whatever `onError` says, so a reset is never silently lost. */
  reset(key: string): Promise<void> {
    return this.call('reset', key, 0).then(
      () => undefined,
      (error: unknown) => this.failed(error, undefined),
    );
  }

  private call(op: StoreOp, key: string, cost: number): Promise<unknown> {
    return post(this.settings, { op, policy: this.spec, key, cost });
  }

  /** failed answers a failed call: bad input rejects; a store failure is reported, then `onError` answers (reset: rejects). */
  private failed<T>(error: unknown, answer: ((policy: 'fail-open' | 'fail-closed') => T) | undefined): T {
    const typed =
      error instanceof FloodgateError ? error : new FloodgateError('STORE_ERROR', `RemoteStore: ${String(error)}`);
    if (INPUT_CODES.has(typed.code)) throw typed;
    const { onError, observer, clock } = this.settings;
    if (observer !== undefined)
      notify(observer, 'storeError', { store: 'remote', error: typed, policy: onError, atMs: clock.now() });
    if (onError === 'throw' || answer === undefined) throw typed;
    return answer(onError);
  }
}

/**
 * RemoteStore returns a library {@link Store} whose state lives in a remote floodgate decision
 * service (its `POST /v1/store`): the application's policy, decided on the service's store. It
 * decides its own failures as the Redis store does: `STORE_TIMEOUT` past `timeoutMs` (adaptive by
 * default: 3 × the p99 of the service's recent answers, between 25 and 250 ms; the HTTP request is
 * aborted), `STORE_ERROR` when the service cannot be reached or its store failed, `STORE_REPLY` for
 * an unreadable answer. After `failuresToOpen` (3) failures in a row its circuit opens: the calls
 * in flight are cut off, and calls fail at once without being sent until a probe, one every
 * `probeIntervalMs` (250 ms), is answered. `onError: 'fail-open' | 'fail-closed'` answers instead
 * of rejecting, saying so in the decision's `reason`. Only policies built by the library's
 * factories can be sent.
 *
 * @example
 * const store = new RemoteStore({ url: 'http://127.0.0.1:8080', onError: 'fail-open' });
 * const limiter = new Limiter({ policy: gcra({ rate: 10, periodMs: 1000, maxBurst: 5 }), store });
 * const decision = await limiter.consume(userId);
 */
export class RemoteStore implements Store {
  private readonly settings: Settings;

  constructor(options: RemoteStoreOptions) {
    const url = parseServiceUrl(options?.url, {
      protocols: ['http:', 'https:'],
      option: 'RemoteStore.url',
      expected: "http://host:port (the decision service's JSON API)",
    });
    const onError = options.onError ?? 'throw';
    if (!['throw', 'fail-open', 'fail-closed'].includes(onError))
      throw new FloodgateError(
        'INVALID_OPTION',
        `RemoteStore.onError must be throw, fail-open or fail-closed, got ${String(options.onError)}`,
        'RemoteStore.onError',
      );
    const observer = options.observer;
    const changed =
      observer?.circuit === undefined
        ? undefined
        : (state: 'closed' | 'open' | 'half-open', atMs: number): void =>
            notify(observer, 'circuit', { store: 'remote', node: url.origin, state, atMs });
    const guard = new ServiceGuard(options, {
      where: 'RemoteStore',
      service: url.origin,
      ...(changed === undefined ? {} : { changed }),
    });
    const pool = new Pool(url.origin, { connections: options.connections ?? 8, pipelining: 1 });
    this.settings = { pool, guard, onError, clock: options.clock ?? monotonicClock, observer };
  }

  /** bind returns the remote table for `algorithm`; throws `INVALID_OPTION` for a policy no factory builds. */
  bind(algorithm: Algorithm): PolicyStore {
    return new RemotePolicyStore(algorithm, this.settings);
  }

  /**
   * consumeAll decides `requests` in one call to the service, charging them only when all are
   * admitted. It rejects with the typed error on any failure (whatever `onError` says): the
   * library's `consumeAll` then decides limit by limit, where `onError` answers.
   */
  consumeAll(requests: readonly StoreRequest[]): Promise<StoreConsumeAllResult> {
    const wire = requests.map((r) => ({ policy: policySpecOf(r.policy), key: r.key, cost: r.cost ?? 1 }));
    return post(this.settings, { op: 'consumeAll', requests: wire }).then((raw) => resultOf(raw, wire.length));
  }

  /** close ends the store's connections. */
  close(): Promise<void> {
    return this.settings.pool.close();
  }
}
