import type {
  LeaseAnswer,
  LeaseAsk,
  LeaseReturn,
  LeaseSource,
  ManualClock,
  MemoryLeaseSource,
  PolicyStore,
} from 'floodgate';

/**
 * StoreLink is one node's connection to the shared store (a {@link MemoryLeaseSource}: the
 * library's lease ledger and per-request table on one state, on the store's clock): every call
 * reaches the store after half a round trip (`roundTripMs()` drawn per call) and its answer comes
 * back after the other half, on the simulation's manual clock. A dead link sends nothing more,
 * and answers to it are lost; a call already on its way still reaches the store.
 */
export class StoreLink implements LeaseSource {
  /** True once the node died. */
  dead = false;
  /** Calls that reached the store: asks, returns and per-request decisions (what Redis would count as scripts). */
  ops = 0;
  /** The per-request table of the shared state through this link (a leased node's fallback, or every decision without leases). */
  readonly direct: PolicyStore;

  constructor(
    private readonly store: MemoryLeaseSource,
    private readonly clock: ManualClock,
    private readonly roundTripMs: () => number,
  ) {
    const table = store.direct();
    this.direct = {
      synchronous: false,
      consume: (key, cost) => this.call(() => Promise.resolve(table.consume(key, cost, Number.NaN))),
      peek: (key, cost) => this.call(() => Promise.resolve(table.peek(key, cost, Number.NaN))),
      refund: (key, cost) => this.call(() => Promise.resolve(table.refund(key, cost, Number.NaN))),
      reset: (key) => this.call(() => Promise.resolve(table.reset(key))),
    };
  }

  /** ask sends a lease ask to the store's ledger. */
  ask(key: string, ask: LeaseAsk): Promise<LeaseAnswer> {
    return this.call(() => this.store.ask(key, ask));
  }

  /** giveBack sends a return to the store's ledger. */
  giveBack(key: string, back: LeaseReturn): Promise<number> {
    return this.call(() => this.store.giveBack(key, back));
  }

  private call<T>(step: () => Promise<T>): Promise<T> {
    if (this.dead) return new Promise<T>(() => undefined);
    const halfMs = this.roundTripMs() / 2;
    return new Promise<T>((resolve, reject) => {
      this.clock.setTimer(() => {
        this.ops++;
        step().then(
          (answer) =>
            this.clock.setTimer(() => {
              if (!this.dead) resolve(answer);
            }, halfMs),
          reject,
        );
      }, halfMs);
    });
  }
}
