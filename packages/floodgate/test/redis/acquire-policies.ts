// What acquire-processes.test.ts and its worker (acquire-worker.ts) share: the policies under test
// and the messages they exchange.
import { gcra, tokenBucket, type Algorithm } from '../../src/index.js';

export type PolicyKind = 'token-bucket' | 'gcra';

/** policyOf returns `kind` with a burst of `capacity`, then `perSecond` admissions per second. */
export function policyOf(kind: PolicyKind, capacity: number, perSecond: number): Algorithm {
  return kind === 'token-bucket'
    ? tokenBucket({ capacity, refillPerSecond: perSecond })
    : gcra({ rate: perSecond, periodMs: 1000, maxBurst: capacity - 1 });
}

/** WorkerArgs is the worker's one command-line argument, as JSON. */
export interface WorkerArgs {
  readonly port: number;
  readonly prefix: string;
  /** The policy's burst (token bucket capacity; GCRA maxBurst + 1). */
  readonly capacity: number;
  /** Admissions per second after the burst. */
  readonly perSecond: number;
}

/** RunMessage asks a worker to start `count` acquires on `key` at once. */
export interface RunMessage {
  readonly type: 'run';
  readonly policy: PolicyKind;
  readonly key: string;
  readonly count: number;
  readonly maxWaitMs: number;
}

export type ParentMessage = RunMessage | { readonly type: 'exit' };

/** Outcome is one acquire call, timed on Date.now() (the clock every process and Redis share). */
export interface Outcome {
  /** Just before `acquire` was called. */
  readonly startedAt: number;
  /** When the call resolved or rejected. */
  readonly settledAt: number;
  /** undefined when admitted; else the FloodgateError code (or what was thrown). */
  readonly error: string | undefined;
}

export type WorkerReply = { readonly type: 'ready' } | { readonly type: 'done'; readonly outcomes: Outcome[] };
