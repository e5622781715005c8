import assert from 'node:assert/strict';
import { limitOf, type PolicySpec } from './policies.js';

/** Admission is one consume as the caller saw it. */
export interface Admission {
  readonly atMs: number;
  readonly cost: number;
  readonly allowed: boolean;
}

const SLACK = 1e-6;

/**
 * assertWithinBound checks that the admitted cost of a run (costs above 0, no refunds) never exceeds
 * what `spec` allows:
 * - buckets and GCRA: at every point, limit + rate x (sum of forward clock steps so far);
 * - fixed window and weighted counter: the limit per aligned window;
 * - sub-window counter: the limit per N consecutive aligned sub-windows;
 * - sliding log: the limit in any span of windowMs.
 * A request made while the clock is behind counts where the spec records it: in the newest window
 * or sub-window already charged, and in the log at the newest entry's time.
 */
export function assertWithinBound(spec: PolicySpec, run: readonly Admission[]): void {
  switch (spec.kind) {
    case 'tokenBucket':
    case 'leakyBucket':
      return assertRateBound(limitOf(spec), spec.perSecond / 1000, run);
    case 'gcra':
      return assertRateBound(limitOf(spec), spec.rate / spec.periodMs, run);
    case 'fixedWindow':
    case 'weighted':
      return assertSlotBound(spec.limit, spec.windowMs, 1, run);
    case 'subWindows':
      return assertSlotBound(spec.limit, spec.windowMs / spec.subWindows, spec.subWindows, run);
    case 'slidingWindowLog':
      return assertLogBound(spec.limit, spec.windowMs, run);
  }
}

function assertRateBound(limit: number, perMs: number, run: readonly Admission[]): void {
  let admitted = 0;
  let forwardMs = 0;
  let previous: number | undefined;
  for (const [i, a] of run.entries()) {
    if (previous !== undefined && a.atMs > previous) forwardMs += a.atMs - previous;
    previous = a.atMs;
    if (a.allowed) admitted += a.cost;
    const bound = limit + perMs * forwardMs;
    assert.ok(admitted <= bound + SLACK, `after request ${i + 1}: admitted ${admitted} > ${bound}`);
  }
}

/** Aligned slots of `slotMs`; at most `limit` in any `span` consecutive slots. */
function assertSlotBound(limit: number, slotMs: number, span: number, run: readonly Admission[]): void {
  const perSlot = new Map<number, number>();
  let newest = -Infinity;
  for (const a of run) {
    if (!a.allowed) continue;
    const slot = Math.max(Math.floor(a.atMs / slotMs), newest);
    newest = slot;
    perSlot.set(slot, (perSlot.get(slot) ?? 0) + a.cost);
  }
  for (const last of perSlot.keys()) {
    let sum = 0;
    for (let s = last - span + 1; s <= last; s++) sum += perSlot.get(s) ?? 0;
    assert.ok(sum <= limit + SLACK, `slots ${last - span + 1}..${last} of ${slotMs} ms admitted ${sum} > ${limit}`);
  }
}

function assertLogBound(limit: number, windowMs: number, run: readonly Admission[]): void {
  const entries: Array<{ atMs: number; cost: number }> = [];
  let newest = -Infinity;
  for (const a of run) {
    if (!a.allowed) continue;
    newest = Math.max(a.atMs, newest);
    entries.push({ atMs: newest, cost: a.cost });
  }
  // Any span [s, s + windowMs) holding entries holds no more than those in (last - windowMs, last].
  for (const last of entries) {
    const sum = entries
      .filter((e) => e.atMs > last.atMs - windowMs && e.atMs <= last.atMs)
      .reduce((s, e) => s + e.cost, 0);
    assert.ok(sum <= limit, `the ${windowMs} ms up to ${last.atMs} admitted ${sum} > ${limit}`);
  }
}
