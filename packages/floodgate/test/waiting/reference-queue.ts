/**
 * A plain model of a first-in, first-out line over a pure policy, to hold `Limiter.acquire` to.
 * It keeps the admitted history only, and at every event plans the whole line again from
 * scratch: each waiter at the earliest time, not before now nor before the one ahead of it, at
 * which the policy admits it after everyone ahead. A waiter that leaves simply is not in the next
 * plan; one that arrives is refused when its planned wait exceeds its maxWaitMs.
 */

import assert from 'node:assert/strict';
import { decide, type Algorithm } from '../../src/index.js';
import type { Outcome } from './support.js';

/** WaiterSpec is one caller of a scenario: when it comes, what it costs, how long it may wait, when it gives up. */
export interface WaiterSpec {
  readonly arrivalMs: number;
  readonly cost: number;
  readonly maxWaitMs: number;
  /** When the caller aborts (Infinity: never). */
  readonly cancelAtMs: number;
}

/** ScenarioEvent is an arrival or a cancellation, in the order both the model and the test apply them. */
export interface ScenarioEvent {
  readonly atMs: number;
  readonly kind: 'arrive' | 'cancel';
  readonly index: number;
}

/** eventsOf lists a scenario's events by time; at one time, arrivals before cancellations, then by index. */
export function eventsOf(waiters: readonly WaiterSpec[]): ScenarioEvent[] {
  const events: ScenarioEvent[] = [];
  waiters.forEach((w, index) => {
    events.push({ atMs: w.arrivalMs, kind: 'arrive', index });
    if (w.cancelAtMs < Infinity) events.push({ atMs: w.cancelAtMs, kind: 'cancel', index });
  });
  const rank = (e: ScenarioEvent): number => (e.kind === 'arrive' ? 0 : 1);
  return events.sort((a, b) => a.atMs - b.atMs || rank(a) - rank(b) || a.index - b.index);
}

interface Pending {
  readonly index: number;
  readonly cost: number;
  atMs: number;
}

/** referenceOutcomes returns what each waiter of the scenario should get. */
export function referenceOutcomes(policy: Algorithm, waiters: readonly WaiterSpec[]): Outcome[] {
  const outcomes: Outcome[] = waiters.map(() => ({ kind: 'pending' }));
  let state: Float64Array | undefined;
  let pending: Pending[] = [];

  const admitUntil = (nowMs: number): void => {
    while (pending.length > 0 && pending[0]!.atMs <= nowMs) {
      const next = pending.shift()!;
      const step = decide(policy, state, next.atMs, next.cost);
      assert.ok(step.decision.allowed, `model: waiter ${next.index} planned at ${next.atMs} is refused`);
      state = step.state;
      outcomes[next.index] = { kind: 'admitted', atMs: next.atMs };
    }
  };

  for (const event of eventsOf(waiters)) {
    admitUntil(event.atMs);
    const spec = waiters[event.index]!;
    if (event.kind === 'cancel') {
      if (outcomes[event.index]!.kind !== 'pending') continue;
      pending = pending.filter((p) => p.index !== event.index);
      outcomes[event.index] = { kind: 'failed', code: 'ABORTED', atMs: event.atMs };
      plan(policy, state, pending, event.atMs);
      continue;
    }
    const candidate = [...pending, { index: event.index, cost: spec.cost, atMs: 0 }];
    plan(policy, state, candidate, event.atMs);
    const atMs = candidate[candidate.length - 1]!.atMs;
    if (atMs - event.atMs > spec.maxWaitMs) {
      outcomes[event.index] = { kind: 'failed', code: 'WAIT_TIMEOUT', atMs: event.atMs };
      continue;
    }
    pending = candidate;
    admitUntil(event.atMs);
  }
  admitUntil(Infinity);
  return outcomes;
}

/** Plans every pending waiter in order from `nowMs`, given the admitted history `state`. */
function plan(policy: Algorithm, state: Float64Array | undefined, pending: Pending[], nowMs: number): void {
  let floorMs = nowMs;
  for (const p of pending) {
    let atMs = floorMs;
    let step = decide(policy, state, atMs, p.cost);
    if (!step.decision.allowed) {
      atMs += step.decision.retryAfterMs;
      step = decide(policy, state, atMs, p.cost);
      assert.ok(step.decision.allowed, `model: retryAfterMs of waiter ${p.index} is not enough`);
    }
    p.atMs = atMs;
    state = step.state;
    floorMs = atMs;
  }
}
