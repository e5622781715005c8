/**
 * The keys `using` and `await using` look for. Node 20 before 20.4 has neither symbol; Node's own
 * stand-ins are `Symbol.for('nodejs.dispose')` and `Symbol.for('nodejs.asyncDispose')`.
 */
const disposeSymbol: typeof Symbol.dispose = (Symbol.dispose ?? Symbol.for('nodejs.dispose')) as typeof Symbol.dispose;
const asyncDisposeSymbol: typeof Symbol.asyncDispose = (Symbol.asyncDispose ??
  Symbol.for('nodejs.asyncDispose')) as typeof Symbol.asyncDispose;

/**
 * RedisPermitState is where a {@link RedisPermit} stands, as far as this process knows: held,
 * released by its holder, or reclaimed (its lease ended before a release or renew reached Redis).
 */
export type RedisPermitState = 'held' | 'released' | 'reclaimed';

/** PermitLink is what a permit asks of its semaphore; not part of the public surface. */
export interface PermitLink {
  /** Removes holder `id` in Redis; resolves to whether it still held. */
  releaseHolder(id: string): Promise<boolean>;
  /** Extends holder `id`'s lease in Redis; resolves to whether it still held. */
  renewHolder(id: string): Promise<boolean>;
}

/**
 * RedisPermit is one unit of a {@link RedisSemaphore}'s capacity, held in Redis under a random id
 * from `acquire` until {@link release}, or until its lease ends (then Redis reclaims it for the
 * next caller, in any process). Releasing is idempotent, and a release after the lease ended frees
 * nothing: the id is gone from Redis, so a late holder can never free a permit someone else holds.
 *
 * It is `Disposable` and `AsyncDisposable`: `await using permit = await semaphore.acquire()` releases
 * it at the end of the block and reports a failed release; plain `using` starts the release
 * without waiting for it (a release that fails then leaves the permit held until its lease ends).
 *
 * Permits are made by a RedisSemaphore, never by hand.
 */
export class RedisPermit implements Disposable, AsyncDisposable {
  private current: RedisPermitState = 'held';
  private releasing: Promise<boolean> | undefined = undefined;

  /**
   * Creates the permit held under `id`, the holder's id in Redis.
   * @internal Made by RedisSemaphore, never by hand: left out of the API reference.
   */
  constructor(
    private readonly link: PermitLink,
    /** The holder id this permit is kept under in Redis (a random UUID). */
    readonly id: string,
  ) {}

  /** state returns whether the permit is held, released, or known to be reclaimed. */
  get state(): RedisPermitState {
    return this.current;
  }

  /**
   * release gives the permit back, and resolves to true when it freed it in Redis, false when its
   * lease had already ended (it was reclaimed: the state becomes `reclaimed`, and nothing is freed).
   * It is idempotent: every call returns the first call's promise, and Redis is asked once. Rejects
   * with `STORE_ERROR` or `STORE_TIMEOUT` when Redis fails; the lease still bounds how long the
   * permit stays taken.
   */
  release(): Promise<boolean> {
    if (this.releasing !== undefined) return this.releasing;
    if (this.current === 'reclaimed') {
      this.releasing = Promise.resolve(false);
      return this.releasing;
    }
    this.current = 'released';
    this.releasing = this.link.releaseHolder(this.id).then((freed) => {
      if (!freed) this.current = 'reclaimed';
      return freed;
    });
    return this.releasing;
  }

  /**
   * renew extends the lease to `leaseMs` from now (on the server's clock), and resolves to true;
   * it resolves to false, changing nothing, when the permit was released or its lease had already
   * ended (the state becomes `reclaimed`). Rejects with `STORE_ERROR` or `STORE_TIMEOUT` when Redis fails.
   */
  renew(): Promise<boolean> {
    if (this.current !== 'held') return Promise.resolve(false);
    return this.link.renewHolder(this.id).then((held) => {
      if (!held && this.current === 'held') this.current = 'reclaimed';
      return held;
    });
  }

  /** Starts the release at the end of a `using` block; a failure is left to the lease (see the class doc). */
  [disposeSymbol](): void {
    this.release().catch(() => undefined);
  }

  /** Releases the permit at the end of an `await using` block, rejecting when the release fails. */
  async [asyncDisposeSymbol](): Promise<void> {
    await this.release();
  }
}
