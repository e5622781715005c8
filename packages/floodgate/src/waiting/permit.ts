/**
 * The key `using` looks for. Node 20 before 20.4 has no `Symbol.dispose`; Node's own stand-in is
 * `Symbol.for('nodejs.dispose')`, which later versions define `Symbol.dispose` as.
 */
export const disposeSymbol: typeof Symbol.dispose = (Symbol.dispose ??
  Symbol.for('nodejs.dispose')) as typeof Symbol.dispose;

/** The key of the method a Semaphore uses to take a permit back; not part of the public surface. */
export const reclaimPermit: unique symbol = Symbol('reclaimPermit');

/** PermitState is where a {@link Permit} stands: held, released by its holder, or reclaimed at the end of its lease. */
export type PermitState = 'held' | 'released' | 'reclaimed';

/**
 * Permit is one unit of a {@link Semaphore}'s capacity, held from `acquire` until {@link release}.
 * Releasing is idempotent: a second release, or a release after the permit was reclaimed at the
 * end of its lease, does nothing, so a late holder can never free a permit someone else now holds.
 * It is `Disposable`: `using permit = await semaphore.acquire()` releases it at the end of the block.
 *
 * Permits are made by a Semaphore, never by hand.
 */
export class Permit implements Disposable {
  private current: PermitState = 'held';

  /** Made by Semaphore: `giveBack` returns the permit's capacity to it. */
  constructor(
    private readonly giveBack: (permit: Permit) => void,
    /** When the permit was granted, on the semaphore's clock, in ms. */
    readonly grantedAtMs: number,
    /** When the permit's lease ends and it may be reclaimed, in ms (Infinity: never). */
    readonly expiresAtMs: number,
  ) {}

  /** state returns whether the permit is held, released, or reclaimed. */
  get state(): PermitState {
    return this.current;
  }

  /** release gives the permit back to its semaphore; once held, later calls do nothing. */
  release(): void {
    if (this.current !== 'held') return;
    this.current = 'released';
    this.giveBack(this);
  }

  /** Releases the permit at the end of a `using` block. */
  [disposeSymbol](): void {
    this.release();
  }

  /** Marks the permit reclaimed (its holder's release will do nothing); false unless it was held. */
  [reclaimPermit](): boolean {
    if (this.current !== 'held') return false;
    this.current = 'reclaimed';
    return true;
  }
}
