import { monotonicClock, type Clock } from '../../core/clock.js';
import type { Decision } from '../../core/decision.js';
import { FloodgateError } from '../../core/errors.js';
import { notify, type Observer } from '../../core/events.js';
import { systemTimers, type Timers } from '../../core/timers.js';
import type { RedisAdapter } from './adapter.js';
import type { Circuit, CircuitRouter } from './circuit.js';
import { DeadlineQueue } from '../deadline-queue.js';
import { ScriptCall, messageOf, type CallHost, type ScriptReceiver } from './script-call.js';
import type { StoreTimeout } from '../../core/store-timeout.js';
import type { LuaScript } from './scripts/index.js';

/** RunnerSeams are what a {@link ScriptRunner} reads time from and reports to; each has a default. */
export interface RunnerSeams {
  /** Where "now" comes from (default {@link monotonicClock}). */
  readonly clock?: Clock;
  /** Where the deadline timer is set (default {@link systemTimers}). */
  readonly timers?: Timers;
  /** Hears one `storeCall` per script call. */
  readonly observer?: Observer;
}

/** Late receives the reply of a call that answered after its deadline (the caller has had a `STORE_TIMEOUT`). */
export type Late = (reply: unknown) => void;

/**
 * ScriptRunner runs floodgate's scripts through an adapter: EVALSHA first, EVAL on NOSCRIPT (a
 * server restarted, failed over or flushed its scripts), each call bounded by `timeoutMs`, and
 * every failure turned into a {@link FloodgateError}: `STORE_ERROR` for what Redis or the client
 * reported (or for a call not sent because its {@link Circuit} is open), `STORE_TIMEOUT` for no
 * answer in time. Promises always reject with Errors, and always settle within the timeout.
 *
 * The timeout is the store's {@link StoreTimeout}: fixed, or (the default) following the latency of
 * Redis's recent answers. When a circuit opens, the calls still waiting on its node are abandoned at
 * once (`STORE_TIMEOUT`): they were sent to a node now known to be failing, and waiting out their
 * deadlines would only delay the failure policy's answer. A call cut off may still run on Redis;
 * its reply, should it come, goes to the caller's `late`.
 *
 * Each script goes through the circuit its router picks from its keys: the one circuit of a single
 * Redis, or on a cluster the circuit of the node serving the keys' slot (`NodeCircuits`), so
 * failures of one node never stop scripts to the others. Error messages name that node.
 */
export class ScriptRunner {
  /** The calls in flight, each with the circuit it went through, so that a circuit opening abandons its own. */
  private readonly inFlight: DeadlineQueue;
  private readonly clock: Clock;
  private readonly timers: Timers;
  /** The observer, only when it listens to store calls. */
  private readonly observer: Observer | undefined;
  /** Hear the time of every answer (the fleet census beats on it, write-backs flush on it). */
  private readonly listeners: Array<(nowMs: number) => void> = [];
  /** Calls cut off at their deadline that Redis has not yet answered or failed: they may still run. */
  private late = 0;
  /** When a call was last cut off, on the runner's clock. */
  private lastCutMs = -Infinity;
  /** What the runner's calls report to. */
  private readonly host: CallHost;

  /**
   * Creates a runner over `adapter` whose calls time out after `timeout`, each sent while the
   * circuit `circuits` picks for it allows (a lone {@link Circuit} guards every call), reading
   * time and reporting calls through `seams`.
   */
  constructor(
    private readonly adapter: RedisAdapter,
    private readonly timeout: StoreTimeout,
    private readonly circuits: CircuitRouter,
    seams: RunnerSeams = {},
  ) {
    this.clock = seams.clock ?? monotonicClock;
    this.timers = seams.timers ?? systemTimers;
    this.observer = typeof seams.observer?.storeCall === 'function' ? seams.observer : undefined;
    this.inFlight = new DeadlineQueue(this.clock, this.timers);
    this.host = this.hostOf();
  }

  /**
   * answers adds `listener` to what hears the time of every answer from Redis, and of the moment the
   * last call cut off at its deadline settled (answered late, or failed): the census beats on it,
   * and write-backs flush on it.
   */
  answers(listener: (nowMs: number) => void): void {
    this.listeners.push(listener);
  }

  /**
   * quiet is true when no call cut off at its deadline is still out, or none was cut off within
   * `graceMs`: what Redis will still run of the past has run, so a write-back charges nothing twice.
   * (A call still out after `graceMs` is taken as lost: its connection was closed.)
   */
  quiet(graceMs: number): boolean {
    return this.late === 0 || this.clock.now() - this.lastCutMs > graceMs;
  }

  /** timeoutMs is the deadline of the next call, in ms. */
  get timeoutMs(): number {
    return this.timeout.ms;
  }

  /**
   * run resolves to the script's raw reply; it rejects at once, sending nothing, while the circuit
   * guarding `keys` is open. `operation` names the call in `storeCall` events (default the script's
   * name); `late`, when given, receives the reply of a call that answered after its deadline.
   */
  run(
    script: LuaScript,
    keys: readonly string[],
    args: readonly string[],
    operation: string = script.name,
    late?: Late,
  ): Promise<unknown> {
    return new Promise((answered, failed) => this.send(script, keys, args, { answered, failed, late }, operation));
  }

  /**
   * send runs `script` as {@link run} does, telling `receiver` how it ended instead of settling a
   * promise: the batch script's way, which keeps one object per call. While the circuit guarding
   * `keys` is open, `receiver.failed` is called at once and nothing is sent.
   */
  send(
    script: LuaScript,
    keys: readonly string[],
    args: readonly string[],
    receiver: ScriptReceiver,
    operation: string = script.name,
  ): void {
    const circuit = this.circuits.circuitOf(keys);
    const admission = circuit.admit();
    if (admission === 'refuse') return receiver.failed(openError(script, circuit));
    const startedMs = this.clock.now();
    const deadlineMs = startedMs + this.timeout.ms;
    const call = new ScriptCall(
      this.host,
      { script, keys, args, target: circuit, probe: admission === 'probe', operation, startedMs, deadlineMs },
      receiver,
    );
    this.inFlight.add(call);
    call.start();
  }

  /** Returns what the runner's calls report to. */
  private hostOf(): CallHost {
    return {
      adapter: this.adapter,
      settle: (call) => this.inFlight.settle(call),
      answered: (call) => {
        const answeredMs = this.clock.now();
        const durationMs = answeredMs - call.spec.startedMs;
        this.timeout.record(durationMs);
        this.hear(answeredMs);
        call.target.succeeded(call.spec.probe);
        if (this.observer !== undefined)
          notify(this.observer, 'storeCall', { store: 'redis', operation: call.spec.operation, durationMs, ok: true });
      },
      failed: (call, error) => {
        if (isUnhealthy(error)) this.failed(call.target, call.spec.probe);
        else call.target.succeeded(call.spec.probe);
        if (this.observer !== undefined)
          notify(this.observer, 'storeCall', {
            store: 'redis',
            operation: call.spec.operation,
            durationMs: this.clock.now() - call.spec.startedMs,
            ok: false,
          });
      },
      errorOf: (call, cause) => storeError(call.spec.script, cause),
      cut: (call) => {
        this.late++;
        this.lastCutMs = this.clock.now();
        return new FloodgateError(
          'STORE_TIMEOUT',
          `RedisStore: the ${call.spec.script.name} script got no answer from ${call.target.name} within ${this.timeout.describe()} (RedisStore.timeoutMs), or ${call.target.name} failed meanwhile; the operation may still have run`,
          'timeoutMs',
        );
      },
      settledLate: () => {
        if (--this.late === 0) this.hear(this.clock.now());
      },
    };
  }

  private hear(nowMs: number): void {
    for (const listener of this.listeners) listener(nowMs);
  }

  /** Records a failure that says Redis is unhealthy; when that opens the circuit, its calls in flight are abandoned. */
  private failed(circuit: Circuit, probe: boolean): void {
    const wasClosed = circuit.state === 'closed';
    circuit.failed(probe);
    if (wasClosed && circuit.state !== 'closed') this.inFlight.abandon(circuit);
  }
}

/**
 * Errors that Redis answered and that say nothing about its health: a script's own failure, a
 * command or key mistake, a missing script. Anything else (a timeout, a closed connection, LOADING,
 * BUSY, CLUSTERDOWN, TRYAGAIN, MASTERDOWN, READONLY during a failover) counts against the circuit.
 */
const ANSWERED = /^(FLOODGATE|ERR|WRONGTYPE|CROSSSLOT|NOSCRIPT|NOPERM|NOAUTH|WRONGPASS|OOM)\b/;

/** The error of a script not sent because `circuit` is open: it names what failed (the node, on a cluster). */
function openError(script: LuaScript, circuit: Circuit): FloodgateError {
  return new FloodgateError(
    'STORE_ERROR',
    `RedisStore: the ${script.name} script was not sent: ${circuit.name} failed repeatedly (the circuit is open), next probe in ${circuit.retryInMs()} ms`,
  );
}

function isUnhealthy(error: unknown): boolean {
  if (!(error instanceof FloodgateError) || error.code === 'STORE_TIMEOUT') return true;
  return !ANSWERED.test(messageOf(error.cause));
}

/** What an OOM reply means for limits, appended to its message. */
const OOM_HINT =
  ': Redis is full (used memory above its maxmemory, under maxmemory-policy noeviction) and refuses writes; keys already refused stay refused, while new keys and admissions are decided by RedisStore.onError until memory is freed or maxmemory raised (see RedisStore.checkMemory)';

/** hintFor returns what to add to a Redis error `message` to say what it means and what to do ('' when nothing). */
export function hintFor(message: string): string {
  if (message.includes('CROSSSLOT'))
    return ': the keys are in different hash slots; tell the adapter it talks to a cluster ({ cluster: true }) or give the keys one hash tag';
  return /(^|[\s:])OOM\b/.test(message) ? OOM_HINT : '';
}

function storeError(script: LuaScript, cause: unknown): FloodgateError {
  const message = messageOf(cause);
  const error = new FloodgateError(
    'STORE_ERROR',
    `RedisStore: the ${script.name} script failed: ${message}${hintFor(message)}`,
  );
  error.cause = cause;
  return error;
}

/** replyError returns the `STORE_REPLY` error for a reply that is not what `what` promises. */
export function replyError(what: string, expected: string, reply: unknown): FloodgateError {
  return new FloodgateError(
    'STORE_REPLY',
    `RedisStore: ${what} answered ${describeReply(reply)} where ${expected} was expected`,
  );
}

function describeReply(reply: unknown): string {
  try {
    const text = JSON.stringify(reply, (_k, v: unknown) => (Buffer.isBuffer(v) ? `<${v.length} bytes>` : v));
    if (text !== undefined) return text.length > 120 ? `${text.slice(0, 120)}…` : text;
  } catch {
    // fall through: not serialisable
  }
  return typeof reply;
}

/** textOf returns a reply element as a string (clients may hand back Buffers), or undefined. */
export function textOf(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (value instanceof Uint8Array) return Buffer.from(value).toString('latin1');
  return undefined;
}

const WHOLE = /^(0|[1-9][0-9]*)$/;

/** Reads a whole, non-negative number of the reply: an integer reply, or its text (clients may hand back either). */
function wholeOf(value: unknown, allowInfinity: boolean): number | undefined {
  if (typeof value === 'number') return Number.isSafeInteger(value) && value >= 0 ? value : undefined;
  const text = textOf(value);
  if (text === undefined) return undefined;
  if (allowInfinity && text === 'Infinity') return Infinity;
  return WHOLE.test(text) ? Number(text) : undefined;
}

/**
 * parseDecisionAt reads the four fields of a decision `[allowed, remaining, retryAfterMs, resetMs]`
 * (integers, or their text) from `reply` at `offset`, or returns undefined when they are not what
 * the scripts send.
 */
export function parseDecisionAt(reply: readonly unknown[], offset: number, limit: number): Decision | undefined {
  const allowedAt = wholeOf(reply[offset], false);
  const remaining = wholeOf(reply[offset + 1], false);
  const retryAfterMs = wholeOf(reply[offset + 2], true);
  const resetMs = wholeOf(reply[offset + 3], true);
  if (
    (allowedAt !== 1 && allowedAt !== 0) ||
    remaining === undefined ||
    retryAfterMs === undefined ||
    resetMs === undefined
  ) {
    return undefined;
  }
  return scriptDecision(allowedAt === 1, limit, remaining, retryAfterMs, resetMs);
}

/** scriptDecision returns the decision a script answered with these fields: `ok` when admitted, else refused by the `limit`. */
export function scriptDecision(
  allowed: boolean,
  limit: number,
  remaining: number,
  retryAfterMs: number,
  resetMs: number,
): Decision {
  return { allowed, limit, remaining, retryAfterMs, resetMs, reason: allowed ? 'ok' : 'limit' };
}
