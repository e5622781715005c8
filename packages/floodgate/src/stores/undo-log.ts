/**
 * RestorableTable is a table that can put back a key's state saved by an {@link UndoLog}: the
 * memory store's tables.
 */
export interface RestorableTable {
  /**
   * restoreState writes the cells saved at `offset` in `saved` back as the state of `slot`, or,
   * when `insertedKey` is given (the step added that key), forgets the key.
   */
  restoreState(slot: number, saved: Float64Array, offset: number, insertedKey: string | undefined): void;
}

/**
 * UndoLog remembers the state of keys before a step charges them, so that a decision over several
 * limits that ends in a refusal can put every one back bit for bit (no refund arithmetic, no float
 * drift), in reverse order, so that a key charged twice comes back to its first state. It is used
 * within one synchronous step: no other request can see the state in between.
 */
export class UndoLog {
  // Parallel arrays, reused from step to step: a step saves a few states, and saving must cost
  // little more than the charge it precedes.
  private readonly tables: Array<RestorableTable | undefined> = [];
  private readonly slots: number[] = [];
  private readonly offsets: number[] = [];
  private readonly inserted: Array<string | undefined> = [];
  private saved = new Float64Array(64);
  private count = 0;
  private used = 0;

  /** length returns how many states are saved. */
  get length(): number {
    return this.count;
  }

  /**
   * save copies `width` cells of `records` from `at`, the state of `slot` in `table`;
   * `insertedKey` is the key when the step has just added it (an undo then forgets it).
   */
  save(
    table: RestorableTable,
    slot: number,
    records: Float64Array,
    at: number,
    width: number,
    insertedKey?: string,
  ): void {
    const used = this.used;
    if (used + width > this.saved.length) this.grow(used + width);
    const saved = this.saved;
    for (let j = 0; j < width; j++) saved[used + j] = records[at + j]!;
    const i = this.count++;
    this.tables[i] = table;
    this.slots[i] = slot;
    this.offsets[i] = used;
    this.inserted[i] = insertedKey;
    this.used = used + width;
  }

  /** undo puts every saved state back, the latest first, and empties the log. */
  undo(): void {
    for (let i = this.count - 1; i >= 0; i--)
      this.tables[i]!.restoreState(this.slots[i]!, this.saved, this.offsets[i]!, this.inserted[i]);
    this.clear();
  }

  /** clear forgets every saved state (the step succeeded), holding no reference to a table or key. */
  clear(): void {
    for (let i = 0; i < this.count; i++) {
      this.tables[i] = undefined;
      this.inserted[i] = undefined;
    }
    this.count = 0;
    this.used = 0;
  }

  private grow(cells: number): void {
    const saved = new Float64Array(Math.max(cells, this.saved.length * 2));
    saved.set(this.saved.subarray(0, this.used));
    this.saved = saved;
  }
}
