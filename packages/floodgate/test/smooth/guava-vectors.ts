/**
 * Guava's RateLimiterTest as data: every test as operations and the event log Guava asserts
 * (`guava-vectors.json`, a copy of shared/reference/guava-vectors.json beside the repository).
 * The tests that replay them (the in-process limiter, the Redis limiter, the decision service's
 * `/v1/reserve`) read them from here.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** GuavaOp is one step of a Guava test: create a limiter, sleep, advance, acquire, tryAcquire or setRate. */
export interface GuavaOp {
  op: string;
  rate?: number | string;
  warmupMs?: number;
  coldFactor?: number;
  permits?: number;
  repeat?: number;
  ms?: number;
  nanos?: number;
  timeoutMicros?: number;
  expect?: boolean;
}

/** GuavaVector is one Guava test: its steps and the stopwatch events (with their microseconds) Guava asserts. */
export interface GuavaVector {
  ops: GuavaOp[];
  events: string[];
  eventMicros: number[];
}

/** GUAVA_VECTORS_FILE is the path of the copy of the vectors in this repository. */
export const GUAVA_VECTORS_FILE = fileURLToPath(new URL('guava-vectors.json', import.meta.url));

/** GUAVA_VECTORS are Guava's tests by name. */
export const GUAVA_VECTORS: Readonly<Record<string, GuavaVector>> = (
  JSON.parse(readFileSync(GUAVA_VECTORS_FILE, 'utf8')) as { tests: Record<string, GuavaVector> }
).tests;

/** hasFiniteRates tells whether every rate a vector sets is a finite number (not Infinity or Double.MIN_VALUE). */
export function hasFiniteRates(vector: GuavaVector): boolean {
  return vector.ops.every((op) => op.rate === undefined || typeof op.rate === 'number');
}
