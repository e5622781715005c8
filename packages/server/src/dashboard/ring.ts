/** A ring of the latest items, for the dashboard's bounded histories. */

/** Ring holds at most `capacity` items (at least 1): pushing past it overwrites the oldest. */
export class Ring<T> {
  private readonly slots: (T | undefined)[];
  private next = 0;
  private size = 0;

  constructor(private readonly capacity: number) {
    this.slots = new Array<T | undefined>(capacity);
  }

  /** push adds `item` as the newest. */
  push(item: T): void {
    this.slots[this.next] = item;
    this.next = (this.next + 1) % this.capacity;
    this.size = Math.min(this.size + 1, this.capacity);
  }

  /** latest returns the newest item, or undefined when empty. */
  latest(): T | undefined {
    return this.size === 0 ? undefined : this.slots[(this.next - 1 + this.capacity) % this.capacity];
  }

  /** replaceLatest puts `item` in the newest item's place; on an empty ring it does nothing. */
  replaceLatest(item: T): void {
    if (this.size === 0) return;
    this.slots[(this.next - 1 + this.capacity) % this.capacity] = item;
  }

  /** items returns the items, oldest first. */
  items(): T[] {
    const out: T[] = [];
    for (let i = this.size; i > 0; i--) out.push(this.slots[(this.next - i + this.capacity) % this.capacity]!);
    return out;
  }
}
