import type { Algorithm } from '../core/algorithm.js';
import { ceilMs, type Decision } from '../core/decision.js';
import { FloodgateError, describeValue } from '../core/errors.js';
import { positiveInteger } from '../core/validate.js';
import { KEY_CELLS, KeyTable, MAX_KEY_LENGTH } from './key-table.js';
import { OverflowSketch } from './overflow-sketch.js';
import type { Store, SyncPolicyStore } from './store.js';
import type { RestorableTable, UndoLog } from './undo-log.js';

/** MemoryStoreOptions configures {@link MemoryStore}. */
export interface MemoryStoreOptions {
  /** Most keys each bound policy holds at once (default 1,000,000). See {@link MemoryStore} for what happens at the bound. */
  maxKeys?: number;
  /** Longest key accepted, in UTF-16 code units (default 1024, at most 16,384). */
  maxKeyLength?: number;
  /**
   * Whether new keys that a full table cannot hold are decided by the overflow tier (default
   * true; see {@link MemoryStore}); false refuses them with reason `store-full`.
   */
  overflow?: boolean;
}

/** MAX_KEYS is the largest `maxKeys` a {@link MemoryStore} accepts. */
export const MAX_KEYS = 16_000_000;

/**
 * Where a slot's state starts within its record: after the key's cells. A copy of `KEY_CELLS` made
 * here, since V8 folds a constant of this module into the code, where it loads an imported one
 * and checks it on every use (bench/library-instructions.ts: an admission 453 -> 438 instructions).
 */
const STATE_OFFSET = KEY_CELLS;
/** NO_KEY marks "no key remembered": the empty string, which no method accepts as a key. */
const NO_KEY = '';
/** Keys remembered by the front cache before it starts over; hot keys are found without hashing. */
const RECENT_KEYS = 4096;
/** Slots the sweep examines on each insert: enough to keep pace with the inserts themselves. */
const SWEEP_PER_INSERT = 2;
/** Slots examined, at the bound, looking for a key at rest before a new key is refused. */
const SWEEP_WHEN_FULL = 64;

/**
 * MemoryStore is the embedded default store: state lives in this process, in flat typed arrays,
 * with no timer per key and no object per key.
 *
 * Expiry is lazy plus an incremental sweep: each new key costs a look at two more slots, and a
 * key whose state has come back to that of a fresh key ("at rest": a refilled bucket, an ended
 * window) is forgotten, which changes no decision.
 *
 * At the `maxKeys` bound, a new key first looks for a key at rest to replace; if none is found,
 * no key is evicted and the new key is decided by the overflow tier (an `OverflowSketch`, made
 * the first time the table is full: 4 rows of `maxKeys` 8-byte cells, 32 bytes per key of
 * capacity, twice that for the sliding windows), a count-min sketch of the policy's state that can
 * only over-count: no key is ever admitted beyond its limit, and an honest newcomer is refused
 * only when its cells are shared with keys that spent enough (measured: with 10x `maxKeys` keys of
 * one unit each in flight, no newcomer refused for limits of 10 or more). Refunds to keys decided
 * there are not applied (they only over-count); bookings (`reserve`) are made there too. With
 * `overflow: false` (or a policy the tier does not know) such new keys are refused with reason
 * `store-full`. Keys that are throttled, or have spent anything not yet restored, are never
 * forgotten: flooding the store with fresh keys cannot reset anyone's limit.
 *
 * Policies are told apart by name and parameters ({@link policyIdentity}), not by object: a
 * configuration reloaded into new limiters on the same store finds every key of an unchanged
 * policy as it was. Keys of a policy that changed are not converted: the changed policy gets a
 * new table and its keys start fresh, and the old table (with its keys' state) is dropped once
 * the last limiter bound to it is closed ({@link MemoryStore.release}, `Limiter.close`).
 *
 * @example
 * const store = new MemoryStore({ maxKeys: 100_000 });
 * const limiter = new Limiter({ policy: gcra({ rate: 10, periodMs: 1000, maxBurst: 5 }), store });
 */
export class MemoryStore implements Store {
  /** Tables by policy identity ({@link policyIdentity}), each with the number of binds not yet released. */
  private readonly tables = new Map<string, { table: MemoryTable; binds: number }>();
  private readonly maxKeys: number;
  private readonly maxKeyLength: number;
  private readonly overflow: boolean;

  /** Creates an empty store; nothing is allocated until a policy binds to it. */
  constructor(options: MemoryStoreOptions = {}) {
    this.maxKeys = positiveInteger(options.maxKeys ?? 1_000_000, 'MemoryStore.maxKeys');
    if (this.maxKeys > MAX_KEYS) {
      throw new FloodgateError(
        'INVALID_OPTION',
        `MemoryStore.maxKeys must be at most ${MAX_KEYS}, got ${this.maxKeys}`,
        'MemoryStore.maxKeys',
      );
    }
    this.maxKeyLength = positiveInteger(options.maxKeyLength ?? 1024, 'MemoryStore.maxKeyLength');
    this.overflow = options.overflow ?? true;
    if (typeof this.overflow !== 'boolean') {
      throw new FloodgateError(
        'INVALID_OPTION',
        `MemoryStore.overflow must be true or false, got ${describeValue(this.overflow)}`,
        'MemoryStore.overflow',
      );
    }
    if (this.maxKeyLength > MAX_KEY_LENGTH) {
      throw new FloodgateError(
        'INVALID_OPTION',
        `MemoryStore.maxKeyLength must be at most ${MAX_KEY_LENGTH}, got ${this.maxKeyLength}`,
        'MemoryStore.maxKeyLength',
      );
    }
  }

  /**
   * overflowCounts returns, over every bound table since it was made, the requests of new keys a
   * full table could not hold (`decided`: by the overflow tier, which can only over-count, or
   * refused `store-full`) and how many of them were refused: a table at its `maxKeys` bound is
   * deciding in silence otherwise, its refusals reported as an ordinary `limit`.
   */
  overflowCounts(): { decided: number; refused: number } {
    let decided = 0;
    let refused = 0;
    for (const { table } of this.tables.values()) {
      decided += table.overflowDecided;
      refused += table.overflowRefused;
    }
    return { decided, refused };
  }

  /**
   * bind returns the synchronous table for `algorithm`, creating it on first use. An equal policy
   * (same name and parameters, see {@link policyIdentity}) gets the same table, so a limiter
   * rebuilt from an unchanged config keeps every key's state. Each bind counts until
   * {@link release}d.
   */
  bind(algorithm: Algorithm): MemoryTable {
    const id = policyIdentity(algorithm);
    let entry = this.tables.get(id);
    if (entry === undefined) {
      entry = { table: new MemoryTable(algorithm, this.maxKeys, this.maxKeyLength, this.overflow), binds: 0 };
      this.tables.set(id, entry);
    }
    entry.binds++;
    return entry.table;
  }

  /**
   * release undoes one {@link bind} of `algorithm` (or an equal policy). When no bind is left the
   * table and every key in it are dropped: its memory can be collected, and a later bind starts
   * from fresh keys. Releasing a policy that is not bound does nothing.
   */
  release(algorithm: Algorithm): void {
    const id = policyIdentity(algorithm);
    const entry = this.tables.get(id);
    if (entry === undefined) return;
    if (--entry.binds <= 0) this.tables.delete(id);
  }

  /** policies returns how many policy tables the store holds (each bound and not yet released). */
  get policies(): number {
    return this.tables.size;
  }

  /** size returns the number of keys held, across every bound policy. */
  get size(): number {
    let size = 0;
    for (const { table } of this.tables.values()) size += table.size;
    return size;
  }
}

/**
 * MemoryTable is one policy's keys in a {@link MemoryStore}: a {@link SyncPolicyStore} that
 * answers without promises.
 */
export class MemoryTable implements SyncPolicyStore, RestorableTable {
  readonly synchronous = true;
  private readonly keys: KeyTable;
  /**
   * Front cache of recently used keys to their slots. V8 caches a string's hash inside the string,
   * so a hot key is found here at Map speed; the compact {@link KeyTable} holds every key. Every
   * removal from the table removes the key here too, so an entry is never stale.
   */
  private readonly recent = new Map<string, number>();
  /**
   * The key last found in the front cache, and its slot. `NO_KEY` (the empty string, never a valid
   * key) stands for none, so that no argument, `undefined` included, can match a stale entry.
   */
  private lastKey = NO_KEY;
  private lastSlot = -1;
  private readonly scratch: Float64Array;
  // Numbers read on every decision, so `declare`d (assigned first in the constructor): V8 then
  // keeps each as a number, where a field defined by the class body starts as undefined and is
  // tested for what it holds on every read.
  declare private readonly stride: number;
  /**
   * The cost that needs no check per call: 1, the default, when the policy always admits it, else
   * NaN (equal to no cost, so that every cost is checked). One comparison of numbers, where a
   * boolean read from a field costs V8 a full truth test.
   */
  declare private readonly uncheckedCost: number;
  private sweepCursor = 0;
  /** Earliest rest time among the slots the last sweep examined and kept. */
  private soonestRestMs = Infinity;
  /**
   * The last refusal, by slot, time and cost. A refusal changes no state, so the same request on
   * the same key at the same instant (a flood within one clock tick) gets the same answer, without
   * building it again. Any other change to that slot's state (a charge, refund, reserve, reset,
   * undo or eviction) forgets it. Decisions are shared as they are: never mutate one.
   */
  private refusedSlot = -1;
  private refusedAtMs = NaN;
  private refusedCost = NaN;
  private refusal: Decision | undefined = undefined;
  /**
   * The latest rest time among the keys forgotten at rest. A key not held is decided no earlier
   * than that: forgetting a key must not give back, to a clock that stepped back (or a node whose
   * clock is behind), what it had already spent. It never exceeds a time some caller passed.
   */
  private forgottenRestMs = -Infinity;
  /** The overflow tier, made the first time the table is full (undefined: not yet; null: none for this policy). */
  private overflow: OverflowSketch | null | undefined = undefined;
  /** overflowDecided counts the requests of new keys the full table could not hold (decided by the overflow tier, or refused `store-full`). */
  overflowDecided = 0;
  /** overflowRefused counts those of them refused. */
  overflowRefused = 0;

  constructor(
    private readonly algorithm: Algorithm,
    private readonly maxKeys: number,
    private readonly maxKeyLength: number,
    overflowTier = true,
  ) {
    if (!overflowTier) this.overflow = null;
    this.keys = new KeyTable(algorithm.width);
    this.stride = this.keys.stride;
    this.uncheckedCost = isValidCost(algorithm, 1) ? 1 : NaN;
    this.scratch = new Float64Array(algorithm.width);
    if (algorithm.reserve === undefined) this.reserve = undefined;
  }

  /** size returns the number of keys this table holds. */
  get size(): number {
    return this.keys.size;
  }

  /** consume decides a request of `cost` on `key` at `nowMs` and charges it when admitted; a new key may be refused as `store-full`. */
  consume(key: string, cost: number, nowMs: number): Decision {
    if (cost !== this.uncheckedCost) this.algorithm.checkCost(cost);
    const slot = this.find(key);
    // A key held is the hot path; a new key's insert and overflow stay out of it, so that it
    // inlines whole into a caller's loop (V8 inlines a limited number of bytecodes per function).
    if (slot < 0) return this.consumeNewKey(key, cost, nowMs);
    if (slot === this.refusedSlot) return this.consumeRefusedKey(slot, cost, nowMs);
    return this.charge(slot, cost, nowMs);
  }

  /** consume for the key of the last refusal: the same request at the same instant gets the same refusal. */
  private consumeRefusedKey(slot: number, cost: number, nowMs: number): Decision {
    if (nowMs === this.refusedAtMs && cost === this.refusedCost) return this.refusal!;
    this.refusedSlot = -1;
    return this.charge(slot, cost, nowMs);
  }

  /** consume for a key not held: adds it (or hands it to the overflow tier), then charges it. */
  private consumeNewKey(key: string, cost: number, nowMs: number): Decision {
    nowMs = this.notBeforeRest(nowMs);
    const slot = this.insert(key, nowMs);
    if (slot < 0) return this.overflowConsume(key, cost, nowMs);
    return this.charge(slot, cost, nowMs);
  }

  /**
   * Decides `cost` on the key in `slot`, charging it when admitted and remembering a refusal. The
   * slot is never that of the refusal remembered: {@link consumeRefusedKey} forgets it first, and
   * a new key's slot was free (forgetting a key forgets its refusal).
   */
  private charge(slot: number, cost: number, nowMs: number): Decision {
    const decision = this.algorithm.consume(this.keys.records, slot * this.stride + STATE_OFFSET, nowMs, cost);
    if (!decision.allowed) this.rememberRefusal(slot, nowMs, cost, decision);
    return decision;
  }

  private rememberRefusal(slot: number, nowMs: number, cost: number, decision: Decision): void {
    this.refusedSlot = slot;
    this.refusedAtMs = nowMs;
    this.refusedCost = cost;
    this.refusal = decision;
  }

  /**
   * consumeSaving is {@link consume} that first saves the key's state in `log` when `cost` is above
   * 0, so that `log.undo()` puts it back exactly (a decision over several limits that is refused).
   */
  consumeSaving(key: string, cost: number, nowMs: number, log: UndoLog): Decision {
    if (cost !== this.uncheckedCost) this.algorithm.checkCost(cost);
    const found = this.find(key);
    if (found < 0) nowMs = this.notBeforeRest(nowMs);
    const slot = found >= 0 ? found : this.insert(key, nowMs);
    // A key the overflow tier decides is charged there and not undone: it only over-counts.
    if (slot < 0) return this.overflowConsume(key, cost, nowMs);
    const at = slot * this.stride + STATE_OFFSET;
    if (slot === this.refusedSlot) this.refusedSlot = -1;
    // A key charged more than 0 is not at rest, so no sweep frees its slot before the undo.
    if (cost > 0) log.save(this, slot, this.keys.records, at, this.algorithm.width, found < 0 ? key : undefined);
    return this.algorithm.consume(this.keys.records, at, nowMs, cost);
  }

  /** stateOf returns a copy of `key`'s state cells, or undefined for a key not held (for tests and inspection). */
  stateOf(key: string): Float64Array | undefined {
    const slot = this.find(key);
    if (slot < 0) return undefined;
    const at = slot * this.stride + STATE_OFFSET;
    return this.keys.records.slice(at, at + this.algorithm.width);
  }

  /** restoreState writes a state saved by {@link consumeSaving} back into `slot`, or forgets the key the step added. */
  restoreState(slot: number, saved: Float64Array, offset: number, insertedKey: string | undefined): void {
    if (slot === this.refusedSlot) this.refusedSlot = -1;
    if (insertedKey !== undefined) {
      this.forget(slot, insertedKey);
      return;
    }
    this.keys.records.set(saved.subarray(offset, offset + this.algorithm.width), slot * this.stride + STATE_OFFSET);
  }

  /** peek answers what {@link consume} would, charging nothing and storing no new key. */
  peek(key: string, cost: number, nowMs: number): Decision {
    this.algorithm.checkCost(cost);
    const slot = this.find(key);
    if (slot >= 0) return this.algorithm.peek(this.keys.records, slot * this.stride + STATE_OFFSET, nowMs, cost);
    // An unknown key reads as fresh, and reading it stores nothing.
    this.checkKey(key);
    nowMs = this.notBeforeRest(nowMs);
    if (this.overflow) return this.overflow.peek(key, cost, nowMs);
    this.algorithm.init(this.scratch, 0, nowMs);
    return this.algorithm.peek(this.scratch, 0, nowMs, cost);
  }

  /** refund gives `cost` back to `key`, never above the limit; an unknown key is already full. */
  refund(key: string, cost: number, nowMs: number): void {
    this.algorithm.checkCost(cost);
    const slot = this.find(key);
    if (slot === this.refusedSlot) this.refusedSlot = -1;
    if (slot >= 0) this.algorithm.refund(this.keys.records, slot * this.stride + STATE_OFFSET, nowMs, cost);
    else this.checkKey(key);
  }

  /** reserve books `cost` on `key` now or later and returns the ms to wait, or -1 (see {@link Algorithm.reserve}); absent on window policies. */
  reserve?(key: string, cost: number, nowMs: number, maxWaitMs: number): number {
    this.algorithm.checkCost(cost);
    let slot = this.find(key);
    if (slot < 0) {
      nowMs = this.notBeforeRest(nowMs);
      slot = this.insert(key, nowMs);
    }
    if (slot < 0) return this.overflowTier()?.reserve(key, cost, nowMs, maxWaitMs) ?? -1;
    if (slot === this.refusedSlot) this.refusedSlot = -1;
    return this.algorithm.reserve!(this.keys.records, slot * this.stride + STATE_OFFSET, nowMs, cost, maxWaitMs);
  }

  /** reset forgets `key`; its next request is a fresh key's. */
  reset(key: string): void {
    const slot = this.find(key);
    if (slot >= 0) this.forget(slot, key);
    else this.checkKey(key);
  }

  /**
   * The slot holding `key`, or -1, through the front cache. Keys in the cache were checked when
   * they got there, so only a miss checks `key`; every caller checks `key` before it acts on a -1
   * (the empty string, which is `NO_KEY`, comes back as -1 unchecked).
   */
  private find(key: string): number {
    // A flood from one key is the common case worth a shortcut: the same string, often the same object.
    // The rest is apart, so that this inlines as a small function wherever it is called.
    return key === this.lastKey ? this.lastSlot : this.findOther(key);
  }

  /** {@link find} for a key other than the last one found: the front cache, then the table. */
  private findOther(key: string): number {
    const cached = this.recent.get(key);
    if (cached === undefined) return this.findUncached(key);
    this.lastKey = key;
    this.lastSlot = cached;
    return cached;
  }

  /** The cold half of {@link find}: checks the key, looks in the table and caches what it finds. */
  private findUncached(key: string): number {
    this.checkKey(key);
    const slot = this.keys.find(key);
    if (slot >= 0) this.remember(key, slot);
    return slot;
  }

  private remember(key: string, slot: number): void {
    if (this.recent.size >= RECENT_KEYS) this.recent.clear();
    this.recent.set(key, slot);
  }

  private forget(slot: number, key: string): void {
    if (slot === this.refusedSlot) this.refusedSlot = -1;
    this.recent.delete(key);
    if (slot === this.lastSlot) {
      this.lastKey = NO_KEY;
      this.lastSlot = -1;
    }
    this.keys.remove(slot);
  }

  /** A new key the full table cannot hold: decided by the overflow tier, or `store-full` for a policy without one. */
  private overflowConsume(key: string, cost: number, nowMs: number): Decision {
    const tier = this.overflowTier();
    const decision =
      tier === null ? storeFull(this.algorithm.limit, this.soonestRestMs - nowMs) : tier.consume(key, cost, nowMs);
    this.overflowDecided++;
    if (!decision.allowed) this.overflowRefused++;
    return decision;
  }

  /** The overflow tier, made the first time the table is full; null when off or unknown to the policy. */
  private overflowTier(): OverflowSketch | null {
    if (this.overflow === undefined)
      this.overflow = OverflowSketch.create(this.algorithm, { cellsPerRow: this.maxKeys }) ?? null;
    return this.overflow;
  }

  /** The slot for `key`, adding a fresh key (sweeping as it goes); -1 when full and nothing is at rest. */
  /** restFloorMs is the latest rest time among the keys forgotten at rest (-Infinity before any): a key not held is decided no earlier. */
  get restFloorMs(): number {
    return this.forgottenRestMs;
  }

  /** The time a key not held is decided at: `nowMs`, or the latest rest time of a key forgotten if later. */
  private notBeforeRest(nowMs: number): number {
    return nowMs < this.forgottenRestMs ? this.forgottenRestMs : nowMs;
  }

  /** Adds `key` as a fresh key, sweeping as it goes; -1 when full and nothing is at rest. */
  private insert(key: string, nowMs: number): number {
    this.checkKey(key);
    this.sweep(nowMs, SWEEP_PER_INSERT);
    // Once the overflow tier decides what does not fit, a long search for a key at rest buys nothing but time.
    const search = this.overflow ? SWEEP_PER_INSERT : SWEEP_WHEN_FULL;
    if (this.keys.size >= this.maxKeys && this.sweep(nowMs, search, 1) === 0) return -1;
    const slot = this.keys.findOrInsert(key);
    this.remember(key, slot);
    this.algorithm.init(this.keys.records, slot * this.stride + STATE_OFFSET, nowMs);
    // A key the overflow tier decided keeps what it spent there.
    this.overflow?.seed(key, this.keys.records, slot * this.stride + STATE_OFFSET, nowMs);
    return slot;
  }

  /**
   * Examines up to `slots` slots from the cursor and forgets keys at rest; stops early after
   * `enough` are freed. Returns how many were freed.
   */
  private sweep(nowMs: number, slots: number, enough = Infinity): number {
    const keys = this.keys;
    let freed = 0;
    let soonestRestMs = Infinity;
    for (let n = 0; n < slots && keys.highWater > 0 && freed < enough; n++) {
      if (this.sweepCursor >= keys.highWater) this.sweepCursor = 0;
      const slot = this.sweepCursor++;
      if (!keys.isLive(slot)) continue;
      const restAtMs = this.algorithm.restAtMs(keys.records, slot * this.stride + STATE_OFFSET);
      if (restAtMs <= nowMs) {
        this.forget(slot, keys.keyAt(slot));
        if (restAtMs > this.forgottenRestMs) this.forgottenRestMs = restAtMs;
        freed++;
      } else if (restAtMs < soonestRestMs) {
        soonestRestMs = restAtMs;
      }
    }
    this.soonestRestMs = soonestRestMs;
    return freed;
  }

  private checkKey(key: string): void {
    if (typeof key !== 'string' || key.length === 0 || key.length > this.maxKeyLength) {
      const what = typeof key === 'string' ? `a string of ${key.length} code units` : describeValue(key);
      throw new FloodgateError(
        'INVALID_KEY',
        `key must be a non-empty string of at most ${this.maxKeyLength} code units (MemoryStore.maxKeyLength), got ${what}`,
        'key',
      );
    }
  }
}

/**
 * policyIdentity returns the string that makes two algorithms the same policy for a store: the
 * name, the state width and every parameter. Two algorithms with equal identities decide alike,
 * so they may share keys' state.
 */
export function policyIdentity(algorithm: Algorithm): string {
  const params = algorithm.params;
  const names = typeof params === 'object' && params !== null ? Object.keys(params).sort() : [];
  let id = `${algorithm.name}/${algorithm.width}`;
  for (const name of names) id += `/${name}=${params[name]}`;
  return id;
}

function isValidCost(algorithm: Algorithm, cost: number): boolean {
  try {
    algorithm.checkCost(cost);
    return true;
  } catch {
    return false;
  }
}

/** The refusal of a key the full store cannot track: retry when the soonest examined key comes to rest. */
function storeFull(limit: number, untilRestMs: number): Decision {
  const retryAfterMs = Math.max(1, ceilMs(untilRestMs));
  return { allowed: false, limit, remaining: 0, retryAfterMs, resetMs: 0, reason: 'store-full' };
}
