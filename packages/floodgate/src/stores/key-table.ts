/**
 * KeyTable maps string keys to dense slot numbers (0, 1, 2, ...) with no object per key: key
 * characters are copied into one byte arena, and slots, hashes and lengths live in typed arrays.
 * A store keeps each key's state at its slot in arrays of its own. Freed slots are reused.
 *
 * Lookups hash with a per-table random seed (so colliding keys cannot be prepared in advance)
 * and use open addressing with linear probing; removal shifts later entries back, so there are
 * no tombstones and lookups never slow down with churn.
 */
export class KeyTable {
  /** size is the number of keys held. */
  size = 0;
  /** slotCapacity is how many slots the per-slot arrays hold; it only grows. */
  slotCapacity: number;
  /** highWater is one past the highest slot ever handed out; slots below it are live or free. */
  highWater = 0;
  /** inserted is true when the last {@link KeyTable.findOrInsert} added the key. */
  inserted = false;

  private readonly seed = (Math.random() * 0x100000000) >>> 0;
  private index: Int32Array; // slot + 1 per probe position; 0 is empty
  private mask: number;
  private hashes: Int32Array;
  private starts: Uint32Array; // arena offset of the key; for a free slot, the next free slot + 1
  private lengths: Int16Array; // code units: n >= 0 one byte each, -n - 1 two bytes each, FREE when free
  private arena: Uint8Array;
  private arenaUsed = 0;
  private arenaGarbage = 0;
  private freeHead = 0; // first free slot + 1, 0 when none
  private lastWide = false;

  /** Creates a table sized for about `initialSlots` keys (it grows as needed). */
  constructor(initialSlots = 1024) {
    this.slotCapacity = Math.max(16, initialSlots);
    this.hashes = new Int32Array(this.slotCapacity);
    this.starts = new Uint32Array(this.slotCapacity);
    this.lengths = new Int16Array(this.slotCapacity);
    const indexSize = nextPowerOfTwo(this.slotCapacity * 2);
    this.index = new Int32Array(indexSize);
    this.mask = indexSize - 1;
    this.arena = new Uint8Array(this.slotCapacity * 16);
  }

  /** find returns the slot holding `key`, or -1. */
  find(key: string): number {
    const h = this.hash(key);
    for (let i = h & this.mask; ; i = (i + 1) & this.mask) {
      const entry = this.index[i]!;
      if (entry === 0) return -1;
      if (this.hashes[entry - 1] === h && this.equals(entry - 1, key)) return entry - 1;
    }
  }

  /** findOrInsert returns the slot of `key`, adding it when absent (then {@link inserted} is true). */
  findOrInsert(key: string): number {
    const h = this.hash(key);
    let i = h & this.mask;
    for (; ; i = (i + 1) & this.mask) {
      const entry = this.index[i]!;
      if (entry === 0) break;
      if (this.hashes[entry - 1] === h && this.equals(entry - 1, key)) {
        this.inserted = false;
        return entry - 1;
      }
    }
    this.inserted = true;
    const slot = this.allocate(key, h, this.lastWide);
    if ((this.size << 1) > this.index.length) this.rebuildIndex(this.index.length << 1);
    else this.index[i] = slot + 1;
    return slot;
  }

  /** isLive returns whether `slot` currently holds a key. */
  isLive(slot: number): boolean {
    return slot < this.highWater && this.lengths[slot] !== FREE;
  }

  /** keyAt returns the key held at `slot` (for inspection and tests; allocates a string). */
  keyAt(slot: number): string {
    const length = this.lengths[slot]!;
    const start = this.starts[slot]!;
    let key = '';
    if (length >= 0) for (let j = 0; j < length; j++) key += String.fromCharCode(this.arena[start + j]!);
    else for (let j = 0; j < -length - 1; j++) key += String.fromCharCode(this.arena[start + 2 * j]! | (this.arena[start + 2 * j + 1]! << 8));
    return key;
  }

  /** remove forgets the key at `slot`; the slot is reused by a later insert. */
  remove(slot: number): void {
    if (!this.isLive(slot)) return;
    let i = this.hashes[slot]! & this.mask;
    while (this.index[i] !== slot + 1) i = (i + 1) & this.mask;
    this.shiftBack(i);
    this.arenaGarbage += byteLength(this.lengths[slot]!);
    this.lengths[slot] = FREE;
    this.starts[slot] = this.freeHead;
    this.freeHead = slot + 1;
    this.size--;
  }

  /** Backward-shift deletion at probe position `hole`: keeps every probe chain unbroken. */
  private shiftBack(hole: number): void {
    const mask = this.mask;
    for (let j = (hole + 1) & mask; this.index[j] !== 0; j = (j + 1) & mask) {
      const entry = this.index[j]!;
      const home = this.hashes[entry - 1]! & mask;
      // The entry may move into the hole unless its home lies cyclically in (hole, j].
      const stays = hole <= j ? home > hole && home <= j : home > hole || home <= j;
      if (!stays) {
        this.index[hole] = entry;
        hole = j;
      }
    }
    this.index[hole] = 0;
  }

  private hash(key: string): number {
    let h = this.seed ^ key.length;
    let wide = false;
    for (let j = 0; j < key.length; j++) {
      const c = key.charCodeAt(j);
      if (c > 0xff) wide = true;
      h = Math.imul(h ^ c, 0x01000193);
    }
    // Final avalanche (murmur3's fmix32), so the low bits used for probing depend on every char.
    h ^= h >>> 16;
    h = Math.imul(h, 0x85ebca6b);
    h ^= h >>> 13;
    h = Math.imul(h, 0xc2b2ae35);
    h ^= h >>> 16;
    this.lastWide = wide;
    return h;
  }

  private equals(slot: number, key: string): boolean {
    const length = this.lengths[slot]!;
    const start = this.starts[slot]!;
    const arena = this.arena;
    if (length >= 0) {
      if (length !== key.length || this.lastWide) return false;
      for (let j = 0; j < length; j++) if (arena[start + j] !== key.charCodeAt(j)) return false;
      return true;
    }
    if (-length - 1 !== key.length || !this.lastWide) return false;
    for (let j = 0; j < key.length; j++) {
      if ((arena[start + 2 * j]! | (arena[start + 2 * j + 1]! << 8)) !== key.charCodeAt(j)) return false;
    }
    return true;
  }

  private allocate(key: string, h: number, wide: boolean): number {
    let slot: number;
    if (this.freeHead !== 0) {
      slot = this.freeHead - 1;
      this.freeHead = this.starts[slot]!;
    } else {
      if (this.highWater === this.slotCapacity) this.growSlots();
      slot = this.highWater++;
    }
    const bytes = wide ? key.length * 2 : key.length;
    if (this.arenaUsed + bytes > this.arena.length) this.makeArenaRoom(bytes);
    const start = this.arenaUsed;
    const arena = this.arena;
    if (wide) {
      for (let j = 0; j < key.length; j++) {
        const c = key.charCodeAt(j);
        arena[start + 2 * j] = c & 0xff;
        arena[start + 2 * j + 1] = c >>> 8;
      }
    } else {
      for (let j = 0; j < key.length; j++) arena[start + j] = key.charCodeAt(j);
    }
    this.arenaUsed += bytes;
    this.hashes[slot] = h;
    this.starts[slot] = start;
    this.lengths[slot] = wide ? -key.length - 1 : key.length;
    this.size++;
    return slot;
  }

  private growSlots(): void {
    const capacity = this.slotCapacity * 2;
    this.hashes = grow(this.hashes, new Int32Array(capacity));
    this.starts = grow(this.starts, new Uint32Array(capacity));
    this.lengths = grow(this.lengths, new Int16Array(capacity));
    this.slotCapacity = capacity;
  }

  /** Compacts the arena when half of it is garbage, else doubles it. */
  private makeArenaRoom(bytes: number): void {
    const live = this.arenaUsed - this.arenaGarbage;
    const capacity = this.arenaGarbage * 2 >= this.arenaUsed
      ? Math.max(this.arena.length, (live + bytes) * 2)
      : Math.max(this.arena.length * 2, live + bytes);
    const next = new Uint8Array(capacity);
    let used = 0;
    for (let slot = 0; slot < this.highWater; slot++) {
      const length = this.lengths[slot]!;
      if (length === FREE) continue;
      const size = byteLength(length);
      const start = this.starts[slot]!;
      next.set(this.arena.subarray(start, start + size), used);
      this.starts[slot] = used;
      used += size;
    }
    this.arena = next;
    this.arenaUsed = used;
    this.arenaGarbage = 0;
  }

  private rebuildIndex(size: number): void {
    this.index = new Int32Array(size);
    this.mask = size - 1;
    for (let slot = 0; slot < this.highWater; slot++) {
      if (this.lengths[slot] === FREE) continue;
      let i = this.hashes[slot]! & this.mask;
      while (this.index[i] !== 0) i = (i + 1) & this.mask;
      this.index[i] = slot + 1;
    }
  }

  /** bytesUsed returns the bytes this table's arrays take, for tests and metrics. */
  bytesUsed(): number {
    return this.index.byteLength + this.hashes.byteLength + this.starts.byteLength + this.lengths.byteLength + this.arena.byteLength;
  }
}

/** MAX_KEY_LENGTH is the longest key, in UTF-16 code units, a {@link KeyTable} can hold. */
export const MAX_KEY_LENGTH = 16_384;

const FREE = -32768;

function byteLength(length: number): number {
  return length >= 0 ? length : (-length - 1) * 2;
}

function nextPowerOfTwo(n: number): number {
  let p = 16;
  while (p < n) p *= 2;
  return p;
}

function grow<T extends Int32Array | Uint32Array | Int16Array>(from: T, to: T): T {
  to.set(from);
  return to;
}
