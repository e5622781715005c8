import { expectedArrivals } from './parse-scenario.js';
import { SeededRandom, ZipfSampler } from './random.js';
import type { SourceBase, TrafficSpec } from './scenario.js';

/**
 * Arrivals are the requests of a run in time order, as parallel typed arrays: arrival time (ms),
 * key id (an index into `keys`) and cost. Nothing here is an object per request.
 */
export interface Arrivals {
  readonly length: number;
  readonly atMs: Float64Array;
  readonly keyIds: Int32Array;
  readonly costs: Float64Array;
  /** Key names by id. */
  readonly keys: readonly string[];
}

/** Requests of one source, in time order, in typed arrays that double as they fill. */
class Batch {
  length = 0;
  atMs: Float64Array;
  keyIds: Int32Array;
  costs: Float64Array;

  /** Sized for `capacity` requests from the start, so that a source of known size never grows (growing leaves copies behind). */
  constructor(capacity: number) {
    const size = Math.max(1024, Math.ceil(capacity));
    this.atMs = new Float64Array(size);
    this.keyIds = new Int32Array(size);
    this.costs = new Float64Array(size);
  }

  push(atMs: number, keyId: number, cost: number): void {
    if (this.length === this.atMs.length) this.grow();
    this.atMs[this.length] = atMs;
    this.keyIds[this.length] = keyId;
    this.costs[this.length++] = cost;
  }

  private grow(): void {
    const size = this.atMs.length * 2;
    const atMs = new Float64Array(size);
    const keyIds = new Int32Array(size);
    const costs = new Float64Array(size);
    atMs.set(this.atMs);
    keyIds.set(this.keyIds);
    costs.set(this.costs);
    this.atMs = atMs;
    this.keyIds = keyIds;
    this.costs = costs;
  }
}

/** Names keys and hands out their ids, first come first numbered. */
class KeyNames {
  readonly names: string[] = [];
  private readonly ids = new Map<string, number>();

  idOf(name: string): number {
    let id = this.ids.get(name);
    if (id === undefined) {
      id = this.names.length;
      this.names.push(name);
      this.ids.set(name, id);
    }
    return id;
  }
}

/**
 * generateArrivals returns every request the traffic sources make in [0, durationMs), merged in
 * time order (ties keep the order of the sources). Random draws come from `seed` alone, each
 * source from its own stream, so adding a source does not change the others.
 */
export function generateArrivals(traffic: readonly TrafficSpec[], durationMs: number, seed: number): Arrivals {
  const names = new KeyNames();
  const batches = traffic.map((spec, i) =>
    generateSource(spec, durationMs, new SeededRandom(seed + 0x9e3779b9 * (i + 1)), names),
  );
  return mergeBatches(batches, names.names);
}

function generateSource(spec: TrafficSpec, durationMs: number, random: SeededRandom, names: KeyNames): Batch {
  // The expected count, and for Poisson six standard deviations more: it grows once in a billion runs.
  const expected = expectedArrivals(spec);
  const batch = new Batch(expected + 6 * Math.sqrt(expected) + 16);
  if (spec.type === 'trace') {
    const rows = [...spec.rows].sort((a, b) => a.atMs - b.atMs);
    for (const row of rows) {
      if (row.atMs >= durationMs) break;
      batch.push(row.atMs, names.idOf(row.key ?? 'k'), row.cost ?? 1);
    }
    return batch;
  }
  const keyOf = keyPicker(spec, random, names);
  const emit = (atMs: number): void => {
    if (atMs >= 0 && atMs < durationMs) batch.push(atMs, keyOf(), spec.cost);
  };
  forEachTime(spec, random, emit);
  return batch;
}

/** Calls `emit` with each arrival time of a generated source, in increasing order. */
function forEachTime(
  spec: Exclude<TrafficSpec, { type: 'trace' }>,
  random: SeededRandom,
  emit: (atMs: number) => void,
): void {
  switch (spec.type) {
    case 'constant':
      return evenly(spec.startMs, spec.endMs, spec.ratePerSecond, emit);
    case 'burst':
      for (let i = 0; i < spec.count; i++) emit(spec.atMs + (spec.spreadMs * i) / spec.count);
      return;
    case 'boundary-burst':
      for (let i = 0; i < spec.count; i++) emit(spec.boundaryMs - spec.gapMs);
      for (let i = 0; i < spec.count; i++) emit(spec.boundaryMs);
      return;
    case 'ramp':
      return ramp(spec, emit);
    case 'poisson':
      if (spec.ratePerSecond <= 0) return;
      for (
        let t = spec.startMs + random.exponential(spec.ratePerSecond / 1000);
        t < spec.endMs;
        t += random.exponential(spec.ratePerSecond / 1000)
      )
        emit(t);
      return;
    case 'on-off':
      for (let cycle = spec.startMs; cycle < spec.endMs; cycle += spec.onMs + spec.offMs) {
        evenly(cycle, Math.min(cycle + spec.onMs, spec.endMs), spec.ratePerSecond, emit);
      }
      return;
  }
}

/** Arrivals `1000 / ratePerSecond` ms apart from `startMs` (inclusive) to `endMs` (exclusive). */
function evenly(startMs: number, endMs: number, ratePerSecond: number, emit: (atMs: number) => void): void {
  if (ratePerSecond <= 0) return;
  const gapMs = 1000 / ratePerSecond;
  for (let k = 0; startMs + k * gapMs < endMs; k++) emit(startMs + k * gapMs);
}

/** A rate moving linearly: the k-th arrival where the integrated rate reaches k + 1/2. */
function ramp(
  spec: { fromPerSecond: number; toPerSecond: number; startMs: number; endMs: number },
  emit: (atMs: number) => void,
): void {
  const lengthMs = spec.endMs - spec.startMs;
  if (lengthMs <= 0) return;
  const a = spec.fromPerSecond / 1000;
  const slope = (spec.toPerSecond - spec.fromPerSecond) / 1000 / lengthMs;
  const total = a * lengthMs + (slope * lengthMs * lengthMs) / 2;
  for (let k = 0; k + 0.5 < total; k++) {
    const n = k + 0.5;
    const x = Math.abs(slope) < 1e-15 ? n / a : (-a + Math.sqrt(a * a + 2 * slope * n)) / slope;
    emit(spec.startMs + x);
  }
}

/** Returns a function giving each next request's key id: one fixed key, or a Zipf draw. */
function keyPicker(spec: SourceBase, random: SeededRandom, names: KeyNames): () => number {
  const spread = spec.keys;
  if (spread === undefined) {
    const id = names.idOf(spec.key);
    return () => id;
  }
  const sampler = new ZipfSampler(spread.count, spread.zipfExponent);
  const ids = new Int32Array(spread.count).fill(-1);
  return () => {
    const i = sampler.sample(random.next());
    if (ids[i] === -1) ids[i] = names.idOf(`${spread.prefix}${i}`);
    return ids[i]!;
  };
}

/** Merges batches (each in time order) into one, stable: on equal times the earlier batch first. */
function mergeBatches(batches: Batch[], keys: string[]): Arrivals {
  if (batches.length === 1) {
    // Views, not copies: a copy would hold both at once (40 MB more for 2 M requests).
    const only = batches[0]!;
    return {
      length: only.length,
      atMs: only.atMs.subarray(0, only.length),
      keyIds: only.keyIds.subarray(0, only.length),
      costs: only.costs.subarray(0, only.length),
      keys,
    };
  }
  const length = batches.reduce((n, b) => n + b.length, 0);
  const atMs = new Float64Array(length);
  const keyIds = new Int32Array(length);
  const costs = new Float64Array(length);
  const heads = batches.map(() => 0);
  for (let out = 0; out < length; out++) {
    let best = -1;
    for (let b = 0; b < batches.length; b++) {
      const h = heads[b]!;
      if (h < batches[b]!.length && (best === -1 || batches[b]!.atMs[h]! < batches[best]!.atMs[heads[best]!]!))
        best = b;
    }
    const batch = batches[best]!;
    const h = heads[best]!++;
    atMs[out] = batch.atMs[h]!;
    keyIds[out] = batch.keyIds[h]!;
    costs[out] = batch.costs[h]!;
  }
  return { length, atMs, keyIds, costs, keys };
}
