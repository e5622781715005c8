/** One script on its way to Redis: sent, watched against its deadline, and answered once. */
import type { Deadline } from '../deadline-queue.js';
import type { RedisAdapter } from './adapter.js';
import type { Circuit } from './circuit.js';
import type { LuaScript } from './scripts/index.js';

/**
 * ScriptReceiver hears how a script sent by `ScriptRunner.send` ended: exactly one of `answered`
 * or `failed`, once, and `late` (when it has one) for an answer that came after `failed` had been
 * called at the deadline. A receiver is an object with methods, so a call makes no closures for it.
 */
export interface ScriptReceiver {
  /** answered receives the script's raw reply. */
  answered(reply: unknown): void;
  /** failed receives what stopped the script: always a `FloodgateError`. */
  failed(error: unknown): void;
  /** late receives the reply of a script that answered after its deadline (failed has been called). */
  late?(reply: unknown): void;
}

/** CallHost is what a {@link ScriptCall} reports to: its runner's bookkeeping. */
export interface CallHost {
  readonly adapter: RedisAdapter;
  /** settle marks `call` answered or failed and returns true, or false when it was cut off before. */
  settle(call: ScriptCall): boolean;
  /** answered records a reply that came in time (latency, health, events). */
  answered(call: ScriptCall): void;
  /** failed records a failure, `error` (a cut-off's too): health, events. */
  failed(call: ScriptCall, error: Error): void;
  /** errorOf returns the error the receiver gets for what the client rejected with. */
  errorOf(call: ScriptCall, cause: unknown): Error;
  /** cut records a call cut off at its deadline, and returns its `STORE_TIMEOUT`. */
  cut(call: ScriptCall): Error;
  /** settledLate records that a call cut off earlier has now answered or failed. */
  settledLate(): void;
}

/** CallSpec is what one script call is: the script and its arguments, where it goes, and its times. */
export interface CallSpec {
  readonly script: LuaScript;
  readonly keys: readonly string[];
  readonly args: readonly string[];
  /** The circuit the call goes through. */
  readonly target: Circuit;
  /** Whether the call is its circuit's probe. */
  readonly probe: boolean;
  /** The name of the call in `storeCall` events. */
  readonly operation: string;
  /** When it was sent, on the runner's clock, in ms. */
  readonly startedMs: number;
  /** When it is cut off, on the runner's clock, in ms. */
  readonly deadlineMs: number;
}

/**
 * ScriptCall is one script sent through a `ScriptRunner`: EVALSHA first, EVAL once on NOSCRIPT,
 * watched by the runner's deadline queue (it is its own {@link Deadline}), its end told to its
 * {@link ScriptReceiver}. What a call keeps is this object, its spec and the two handlers of its promise.
 */
export class ScriptCall implements Deadline {
  /** Set once the call settled or was cut off (by the deadline queue, or here). */
  settled = false;
  /** Whether the call was cut off at its deadline (its answer, should it come, is late). */
  private wasCut = false;
  /** Whether the script was sent again by EVAL after NOSCRIPT. */
  private evaluated = false;

  /** When it is cut off, on the runner's clock, in ms: the deadline queue reads it. */
  readonly deadlineMs: number;
  /** The circuit the call goes through: the deadline queue's target. */
  readonly target: Circuit;

  /** Creates the call; {@link start} sends it. */
  constructor(
    private readonly host: CallHost,
    readonly spec: CallSpec,
    private readonly receiver: ScriptReceiver,
  ) {
    this.deadlineMs = spec.deadlineMs;
    this.target = spec.target;
  }

  /** start sends the script by SHA1. */
  start(): void {
    this.send(true);
  }

  /** send sends the script, by SHA1 (EVALSHA) or whole (EVAL), its answer to onReply or onError. */
  private send(bySha1: boolean): void {
    let sent: Promise<unknown>;
    try {
      const { script, keys, args } = this.spec;
      const adapter = this.host.adapter;
      sent = bySha1 ? adapter.evalsha(script.sha1, keys, args) : adapter.eval(script.source, keys, args);
    } catch (error) {
      sent = Promise.reject(error);
    }
    sent.then(this.onReply, this.onError);
  }

  /** expire is the deadline passing (or the runner abandoning the call) before an answer. */
  expire(): void {
    this.wasCut = true;
    const error = this.host.cut(this);
    this.host.failed(this, error);
    this.receiver.failed(error);
  }

  private readonly onReply = (reply: unknown): void => {
    if (this.host.settle(this)) {
      this.host.answered(this);
      this.receiver.answered(reply);
    } else {
      this.receiver.late?.(reply);
    }
    // After the late reply is handed over: what it owed is taken off before anyone hears of it.
    if (this.wasCut) this.host.settledLate();
  };

  private readonly onError = (error: unknown): void => {
    if (!this.evaluated && messageOf(error).startsWith('NOSCRIPT')) {
      this.evaluated = true;
      this.send(false);
      return;
    }
    if (this.host.settle(this)) {
      const failure = this.host.errorOf(this, error);
      this.host.failed(this, failure);
      this.receiver.failed(failure);
    }
    if (this.wasCut) this.host.settledLate();
  };
}

/** messageOf returns an error's message, whatever was thrown. */
export function messageOf(error: unknown): string {
  if (error instanceof Error) return error.message;
  return typeof error === 'string' ? error : `a non-Error value (${typeof error})`;
}
