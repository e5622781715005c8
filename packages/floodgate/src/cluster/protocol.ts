/**
 * What the processes sharing one host's limits say to each other: a worker's {@link ClusterStore}
 * sends requests, the {@link ClusterStoreHost} answers them. Every message is plain JSON (numbers,
 * strings, arrays), so it crosses node's cluster IPC, a worker thread's MessagePort and a socket
 * alike. Numbers that JSON cannot carry (Infinity) travel as strings.
 */
import type { Algorithm } from '../core/algorithm.js';
import { fixedWindow } from '../core/algorithms/fixed-window.js';
import { gcra } from '../core/algorithms/gcra.js';
import { slidingWindowCounter } from '../core/algorithms/sliding-window-counter.js';
import { slidingWindowLog } from '../core/algorithms/sliding-window-log.js';
import { leakyBucket, tokenBucket } from '../core/algorithms/token-bucket.js';
import type { Decision } from '../core/decision.js';
import { FloodgateError, type FloodgateErrorCode } from '../core/errors.js';

/** MARK tags every floodgate message, so an app's own messages on the same channel pass by untouched. */
export const MARK = 'floodgate-cluster/1';

/** The operations a worker asks of the host: a lease's ask and return, and the per-request table's calls. */
export type ClusterOp = 'ask' | 'return' | 'consume' | 'peek' | 'refund' | 'reset' | 'reserve';

/**
 * ClusterRequest is one call: `policy` is the policy's identity (`policyIdentity`: its name, width
 * and parameters), from which the host makes the same policy; `args` are the call's numbers.
 */
export interface ClusterRequest {
  readonly m: typeof MARK;
  readonly id: number;
  readonly op: ClusterOp;
  readonly policy: string;
  readonly key: string;
  readonly holder?: string;
  readonly args: readonly (number | string)[];
}

/** ClusterReply answers the request with the same `id`: `value` on success, else an error's code and message. */
export interface ClusterReply {
  readonly m: typeof MARK;
  readonly id: number;
  readonly value?: unknown;
  readonly error?: { readonly code: string; readonly message: string };
}

/**
 * ClusterChannel is one two-way link between a worker and its host: node's cluster IPC, a worker
 * thread's MessagePort, or a socket. `onMessage` returns a function that stops listening.
 */
export interface ClusterChannel {
  /** send delivers one message to the other end. */
  send(message: ClusterRequest | ClusterReply | ClusterNotice): void;
  /** onMessage hears every message that arrives (floodgate's and any other) until the returned function is called. */
  onMessage(listener: (message: unknown) => void): () => void;
  /** close lets the channel go (the process may then exit); optional. */
  close?(): void;
}

/**
 * ClusterNotice is what the host tells every worker unasked: a key was reset (each worker forgets
 * what it holds of it) or given units back (each worker that refuses it locally asks again).
 */
export interface ClusterNotice {
  readonly m: typeof MARK;
  readonly notice: 'reset' | 'refund';
  readonly policy: string;
  readonly key: string;
}

/** isNotice tells a host's notice apart from anything else on a channel. */
export function isNotice(message: unknown): message is ClusterNotice {
  return (
    typeof message === 'object' && message !== null && (message as ClusterNotice).m === MARK && 'notice' in message
  );
}

/** isRequest tells a floodgate request apart from anything else on a channel. */
export function isRequest(message: unknown): message is ClusterRequest {
  return typeof message === 'object' && message !== null && (message as ClusterRequest).m === MARK && 'op' in message;
}

/** isReply tells a floodgate reply apart from anything else on a channel. */
export function isReply(message: unknown): message is ClusterReply {
  return (
    typeof message === 'object' &&
    message !== null &&
    (message as ClusterReply).m === MARK &&
    'id' in message &&
    !('op' in message)
  );
}

/** wire returns `n` as JSON carries it: a finite number as is, anything else as its string. */
export function wire(n: number): number | string {
  return Number.isFinite(n) ? n : String(n);
}

/** numberOf reads a number sent with {@link wire}; NaN for anything that is not one. */
export function numberOf(v: unknown): number {
  return typeof v === 'number' ? v : typeof v === 'string' ? Number(v) : NaN;
}

/** decisionToWire packs a decision as `[allowed, limit, remaining, retryAfterMs, resetMs, reason]`. */
export function decisionToWire(d: Decision): unknown[] {
  return [d.allowed ? 1 : 0, wire(d.limit), wire(d.remaining), wire(d.retryAfterMs), wire(d.resetMs), d.reason];
}

const REASONS: ReadonlySet<string> = new Set(['ok', 'limit', 'store-full', 'fail-open', 'fail-closed', 'fallback']);

/** decisionFromWire unpacks {@link decisionToWire}, or throws `STORE_REPLY` for anything else. */
export function decisionFromWire(v: unknown): Decision {
  if (Array.isArray(v) && v.length === 6 && (v[0] === 0 || v[0] === 1) && REASONS.has(v[5] as string)) {
    const [limit, remaining, retryAfterMs, resetMs] = [v[1], v[2], v[3], v[4]].map(numberOf) as [
      number,
      number,
      number,
      number,
    ];
    if (![limit, remaining, retryAfterMs, resetMs].some(Number.isNaN))
      return { allowed: v[0] === 1, limit, remaining, retryAfterMs, resetMs, reason: v[5] as Decision['reason'] };
  }
  throw badReply('a decision [allowed, limit, remaining, retryAfterMs, resetMs, reason]', v);
}

/** badReply is the `STORE_REPLY` for a reply that is not what the call expects. */
export function badReply(wanted: string, got: unknown): FloodgateError {
  const text = JSON.stringify(got) ?? String(got);
  return new FloodgateError(
    'STORE_REPLY',
    `the cluster store's host answered ${text.length > 120 ? `${text.slice(0, 120)}...` : text}, not ${wanted}`,
    'store',
  );
}

/** errorOf turns a reply's error back into the typed error the host raised. */
export function errorOf(e: { code: string; message: string }): FloodgateError {
  return new FloodgateError(e.code as FloodgateErrorCode, e.message, 'store');
}

const FACTORIES: Readonly<Record<string, (params: Record<string, number>) => Algorithm>> = {
  'token-bucket': (p) => tokenBucket(p as never),
  'leaky-bucket': (p) => leakyBucket(p as never),
  'fixed-window': (p) => fixedWindow(p as never),
  gcra: (p) => gcra(p as never),
  'sliding-window-log': (p) => slidingWindowLog(p as never),
  'sliding-window-counter': (p) => slidingWindowCounter(p as never),
};

/**
 * policyFromIdentity makes the policy a `policyIdentity` names (`name/width/param=value/...`), as
 * the worker that sent it made it, or throws `INVALID_OPTION` for one the library does not make
 * (a policy of the app's own cannot cross to another process).
 */
export function policyFromIdentity(identity: string): Algorithm {
  const [name, width, ...pairs] = identity.split('/');
  const make = FACTORIES[name ?? ''];
  const params: Record<string, number> = {};
  for (const pair of pairs) {
    const eq = pair.indexOf('=');
    params[pair.slice(0, eq)] = Number(pair.slice(eq + 1));
  }
  const policy = make?.(params);
  if (policy === undefined || String(policy.width) !== width)
    throw new FloodgateError(
      'INVALID_OPTION',
      `a cluster store shares the library's policies only (tokenBucket, leakyBucket, fixedWindow, gcra, slidingWindowLog, slidingWindowCounter), not ${JSON.stringify(identity)}`,
      'policy',
    );
  return policy;
}
