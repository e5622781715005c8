/**
 * KeyTable maps string keys to dense slots (0, 1, 2, ...) and gives each slot a record of float64
 * cells for the caller's state, with no object per key. A record starts with the key itself
 * (up to {@link INLINE_KEY_BYTES} bytes inline; longer keys in a shared byte arena), followed by
 * `stateWidth` cells of state, so that one lookup touches the index and one record.
 *
 * Lookups hash with a per-table random seed (colliding keys cannot be prepared in advance) and use
 * open addressing with linear probing; each index entry carries 8 bits of the hash, so a probe
 * rarely reads a record that is not the one sought. Removal shifts later entries back: no
 * tombstones, so lookups never slow down with churn.
 */
export class KeyTable {
  /** size is the number of keys held. */
  size = 0;
  /** slotCapacity is how many records {@link records} holds; it only grows. */
  slotCapacity: number;
  /** highWater is one past the highest slot ever handed out; slots below it are live or free. */
  highWater = 0;
  /** inserted is true when the last {@link KeyTable.findOrInsert} added the key. */
  inserted = false;
  /** stride is the number of cells per record: the key's, then the state's. */
  readonly stride: number;
  /**
   * records holds every slot's record; slot s's state starts at `s * stride + KEY_CELLS`. It is
   * replaced by a larger array when the table grows, so read it again after an insert.
   */
  records: Float64Array;

  private readonly seed = (Math.random() * 0x100000000) >>> 0;
  private u8: Uint8Array; // byte view of records
  private u16: Uint16Array;
  private u32: Uint32Array;
  // Probe positions: 0 empty, else (8 hash bits << 24 | slot + 1), unsigned.
  private index: Uint32Array;
  private mask: number;
  private arena = new Uint8Array(1024); // bytes of keys too long to keep inline
  private arenaUsed = 0;
  private arenaGarbage = 0;
  private freeHead = 0; // first free slot + 1, 0 when none
  private lastWide = false;

  /** Creates a table whose records carry `stateWidth` cells of state, sized for `initialSlots` keys. */
  constructor(stateWidth: number, initialSlots = 1024) {
    this.stride = KEY_CELLS + stateWidth;
    this.slotCapacity = Math.max(16, initialSlots);
    this.records = new Float64Array(this.slotCapacity * this.stride);
    this.u8 = new Uint8Array(this.records.buffer);
    this.u16 = new Uint16Array(this.records.buffer);
    this.u32 = new Uint32Array(this.records.buffer);
    const positions = nextPowerOfTwo(this.slotCapacity * 2);
    this.index = new Uint32Array(positions);
    this.mask = positions - 1;
  }

  /** find returns the slot holding `key`, or -1. */
  find(key: string): number {
    const h = this.hash(key);
    const tag = h & TAG_MASK;
    for (let i = h & this.mask; ; i = (i + 1) & this.mask) {
      const entry = this.index[i]!;
      if (entry === 0) return -1;
      if ((entry & TAG_MASK) === tag && this.equals((entry & SLOT_MASK) - 1, key)) return (entry & SLOT_MASK) - 1;
    }
  }

  /** findOrInsert returns the slot of `key`, adding it when absent (then {@link inserted} is true). */
  findOrInsert(key: string): number {
    const h = this.hash(key);
    const tag = h & TAG_MASK;
    let i = h & this.mask;
    for (; ; i = (i + 1) & this.mask) {
      const entry = this.index[i]!;
      if (entry === 0) break;
      if ((entry & TAG_MASK) === tag && this.equals((entry & SLOT_MASK) - 1, key)) {
        this.inserted = false;
        return (entry & SLOT_MASK) - 1;
      }
    }
    this.inserted = true;
    const slot = this.allocate(key, this.lastWide);
    if (this.size * 2 > this.mask + 1) this.rebuildIndex((this.mask + 1) * 2);
    else this.index[i] = (tag | (slot + 1)) >>> 0;
    return slot;
  }

  /** isLive returns whether `slot` currently holds a key. */
  isLive(slot: number): boolean {
    return slot < this.highWater && this.u16[slot * this.stride * 4] !== FREE;
  }

  /** keyAt returns the key held at `slot` (for inspection, sweeping and tests; allocates a string). */
  keyAt(slot: number): string {
    const length = this.lengthAt(slot);
    let key = '';
    for (let j = 0; j < length; j++) key += String.fromCharCode(this.charAt(slot, j));
    return key;
  }

  /** remove forgets the key at `slot`; the slot is reused by a later insert. */
  remove(slot: number): void {
    if (!this.isLive(slot)) return;
    let i = this.storedHash(slot) & this.mask;
    while ((this.index[i]! & SLOT_MASK) !== slot + 1) i = (i + 1) & this.mask;
    this.shiftBack(i);
    const base = slot * this.stride;
    const field = this.u16[base * 4]!;
    if ((field & OUTSIDE) !== 0) this.arenaGarbage += byteLength(field);
    this.u16[base * 4] = FREE;
    this.u32[base * 2 + 1] = this.freeHead;
    this.freeHead = slot + 1;
    this.size--;
  }

  /** bytesUsed returns the bytes this table's arrays take (records included), for tests and metrics. */
  bytesUsed(): number {
    return this.index.byteLength + this.records.byteLength + this.arena.byteLength;
  }

  /** Backward-shift deletion at probe position `hole`: keeps every probe chain unbroken. */
  private shiftBack(hole: number): void {
    const { index, mask } = this;
    for (let j = (hole + 1) & mask; index[j] !== 0; j = (j + 1) & mask) {
      const home = this.storedHash((index[j]! & SLOT_MASK) - 1) & mask;
      // The entry may move into the hole unless its home lies cyclically in (hole, j].
      const stays = hole <= j ? home > hole && home <= j : home > hole || home <= j;
      if (!stays) {
        index[hole] = index[j]!;
        hole = j;
      }
    }
    index[hole] = 0;
  }

  private hash(key: string): number {
    let h = this.seed ^ key.length;
    let wide = false;
    for (let j = 0; j < key.length; j++) {
      const c = key.charCodeAt(j);
      if (c > 0xff) wide = true;
      h = Math.imul(h ^ c, 0x01000193);
    }
    this.lastWide = wide;
    return avalanche(h);
  }

  /** The hash of the key stored at `slot`: the same as {@link hash} of that key. */
  private storedHash(slot: number): number {
    const length = this.lengthAt(slot);
    let h = this.seed ^ length;
    for (let j = 0; j < length; j++) h = Math.imul(h ^ this.charAt(slot, j), 0x01000193);
    return avalanche(h);
  }

  private lengthAt(slot: number): number {
    return this.u16[slot * this.stride * 4]! & LENGTH_MASK;
  }

  /** The j-th code unit of the key stored at `slot`. */
  private charAt(slot: number, j: number): number {
    const base = slot * this.stride;
    const field = this.u16[base * 4]!;
    const bytes = (field & OUTSIDE) === 0 ? this.u8 : this.arena;
    const start = (field & OUTSIDE) === 0 ? base * 8 + 2 : this.u32[base * 2 + 1]!;
    if ((field & WIDE) === 0) return bytes[start + j]!;
    return bytes[start + 2 * j]! | (bytes[start + 2 * j + 1]! << 8);
  }

  private equals(slot: number, key: string): boolean {
    const base = slot * this.stride;
    const field = this.u16[base * 4]!;
    if ((field & LENGTH_MASK) !== key.length || ((field & WIDE) !== 0) !== this.lastWide) return false;
    if (field === key.length) {
      // The common case: a short one-byte key, inline right after the length.
      const u8 = this.u8;
      const start = base * 8 + 2;
      for (let j = 0; j < key.length; j++) if (u8[start + j] !== key.charCodeAt(j)) return false;
      return true;
    }
    for (let j = 0; j < key.length; j++) if (this.charAt(slot, j) !== key.charCodeAt(j)) return false;
    return true;
  }

  private allocate(key: string, wide: boolean): number {
    let slot: number;
    if (this.freeHead !== 0) {
      slot = this.freeHead - 1;
      this.freeHead = this.u32[slot * this.stride * 2 + 1]!;
    } else {
      if (this.highWater === this.slotCapacity) this.growRecords();
      slot = this.highWater++;
    }
    const base = slot * this.stride;
    const bytes = wide ? key.length * 2 : key.length;
    let field = key.length | (wide ? WIDE : 0);
    let target = this.u8;
    let start = base * 8 + 2;
    if (bytes > INLINE_KEY_BYTES) {
      field |= OUTSIDE;
      if (this.arenaUsed + bytes > this.arena.length) this.makeArenaRoom(bytes);
      target = this.arena;
      start = this.arenaUsed;
      this.arenaUsed += bytes;
      this.u32[base * 2 + 1] = start;
    }
    this.u16[base * 4] = field;
    for (let j = 0; j < key.length; j++) {
      const c = key.charCodeAt(j);
      if (wide) {
        target[start + 2 * j] = c & 0xff;
        target[start + 2 * j + 1] = c >>> 8;
      } else {
        target[start + j] = c;
      }
    }
    this.size++;
    return slot;
  }

  private growRecords(): void {
    if (this.slotCapacity * 2 > SLOT_MASK) throw new RangeError(`KeyTable cannot hold more than ${SLOT_MASK - 1} keys`);
    this.slotCapacity *= 2;
    const records = new Float64Array(this.slotCapacity * this.stride);
    records.set(this.records);
    this.records = records;
    this.u8 = new Uint8Array(records.buffer);
    this.u16 = new Uint16Array(records.buffer);
    this.u32 = new Uint32Array(records.buffer);
  }

  /** Compacts the arena when half of it is garbage, else doubles it. */
  private makeArenaRoom(bytes: number): void {
    const live = this.arenaUsed - this.arenaGarbage;
    const capacity = Math.max(
      this.arena.length * (this.arenaGarbage * 2 >= this.arenaUsed ? 1 : 2),
      (live + bytes) * 2,
    );
    const next = new Uint8Array(capacity);
    let used = 0;
    for (let slot = 0; slot < this.highWater; slot++) {
      const base = slot * this.stride;
      const field = this.u16[base * 4]!;
      if (field === FREE || (field & OUTSIDE) === 0) continue;
      const start = this.u32[base * 2 + 1]!;
      next.set(this.arena.subarray(start, start + byteLength(field)), used);
      this.u32[base * 2 + 1] = used;
      used += byteLength(field);
    }
    this.arena = next;
    this.arenaUsed = used;
    this.arenaGarbage = 0;
  }

  /** Rehashes every live slot into `positions` probe positions. */
  private rebuildIndex(positions: number): void {
    this.index = new Uint32Array(positions);
    this.mask = positions - 1;
    for (let slot = 0; slot < this.highWater; slot++) {
      if (!this.isLive(slot)) continue;
      const h = this.storedHash(slot);
      let i = h & this.mask;
      while (this.index[i] !== 0) i = (i + 1) & this.mask;
      this.index[i] = ((h & TAG_MASK) | (slot + 1)) >>> 0;
    }
  }
}

/** KEY_CELLS is the number of float64 cells at the start of each record that hold the key. */
export const KEY_CELLS = 3;
/** INLINE_KEY_BYTES is the longest key, in bytes (one per code unit, or two if any is above 255), kept in its record. */
export const INLINE_KEY_BYTES = KEY_CELLS * 8 - 2;
/** MAX_KEY_LENGTH is the longest key, in UTF-16 code units, a {@link KeyTable} can hold. */
export const MAX_KEY_LENGTH = 16_000;

// The record's first 16 bits: the key's length in code units, and two flags.
const LENGTH_MASK = 0x3fff;
const WIDE = 0x4000; // two bytes per code unit
const OUTSIDE = 0x8000; // bytes in the arena, at the record's second 32-bit word
const FREE = 0xffff; // a free slot; its second 32-bit word links the next free slot + 1
const TAG_MASK = 0xff000000;
const SLOT_MASK = 0x00ffffff;

function byteLength(field: number): number {
  return (field & LENGTH_MASK) * ((field & WIDE) !== 0 ? 2 : 1);
}

function nextPowerOfTwo(n: number): number {
  let p = 16;
  while (p < n) p *= 2;
  return p;
}

/** murmur3's fmix32: makes the low bits used for probing depend on every bit of `h`. */
function avalanche(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return h ^ (h >>> 16);
}
