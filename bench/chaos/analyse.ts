/** The chaos bench's figures: what one side's decisions did through one fault. */
import { percentile } from '../redis/drive.js';
import { ERROR, REDIS } from './sides.js';
import type { SideRecords } from './side.js';

/**
 * FaultWindow is one fault, in epoch ms: it began at `startMs`, Redis was back at `returnMs`
 * (resumed, restarted and ready, replica promoted, no longer slow), and its episode ends at `endMs`
 * (the next fault, or the end of the run).
 */
export interface FaultWindow {
  readonly name: string;
  readonly startMs: number;
  readonly returnMs: number;
  readonly endMs: number;
}

/**
 * FaultFigures are one side's figures through one fault: decisions asked in the episode, errors
 * that reached the caller and decisions that never settled (in the episode), latency percentiles
 * of the decisions asked during the fault (`startMs` to `returnMs`) and of those asked in the
 * second after it; when, after Redis was back, the first decision and then every key had been
 * decided by Redis again (ms after `returnMs`, from decisions asked after it; undefined: never).
 */
export interface FaultFigures {
  readonly asked: number;
  readonly errors: number;
  readonly unsettled: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
  readonly p99AfterMs: number;
  readonly firstRedisMs: number | undefined;
  readonly allKeysRedisMs: number | undefined;
  /** The side's event loop's worst stall during the fault (its open loop's timer, late by), in ms. */
  readonly loopStallMs: number;
}

/** figuresOf returns `records`' figures through `fault`, over `keys` keys. */
export function figuresOf(records: SideRecords, fault: FaultWindow, keys: number): FaultFigures {
  const askedAt = (i: number): number => records.baseEpochMs + records.askedMs[i]!;
  const during: number[] = [];
  const after: number[] = [];
  const firstRedis = new Map<number, number>();
  let asked = 0;
  let errors = 0;
  for (let i = 0; i < records.askedMs.length; i++) {
    const at = askedAt(i);
    if (at < fault.startMs || at >= fault.endMs) continue;
    asked++;
    if (records.outcome[i] === ERROR) errors++;
    if (at < fault.returnMs) during.push(records.latencyMs[i]!);
    else if (at < fault.returnMs + 1000) after.push(records.latencyMs[i]!);
    if (at >= fault.returnMs && records.outcome[i] === REDIS) {
      const answeredMs = at + records.latencyMs[i]! - fault.returnMs;
      const key = records.key[i]!;
      if (!firstRedis.has(key) || answeredMs < firstRedis.get(key)!) firstRedis.set(key, answeredMs);
    }
  }
  const unsettled = records.unsettledAskedMs.filter(
    (ms) => records.baseEpochMs + ms >= fault.startMs && records.baseEpochMs + ms < fault.endMs,
  ).length;
  during.sort((a, b) => a - b);
  after.sort((a, b) => a - b);
  const firsts = [...firstRedis.values()];
  let loopStallMs = 0;
  records.lateAtMs.forEach((at, i) => {
    const epochMs = records.baseEpochMs + at;
    if (epochMs >= fault.startMs && epochMs < fault.returnMs) loopStallMs = Math.max(loopStallMs, records.lateByMs[i]!);
  });
  return {
    asked: asked + unsettled,
    errors,
    unsettled,
    p50Ms: percentile(during, 0.5),
    p99Ms: percentile(during, 0.99),
    maxMs: during.length === 0 ? Number.NaN : during[during.length - 1]!,
    p99AfterMs: percentile(after, 0.99),
    firstRedisMs: firsts.length === 0 ? undefined : Math.min(...firsts),
    allKeysRedisMs: firstRedis.size < keys ? undefined : Math.max(...firsts),
    loopStallMs,
  };
}
