import {
  LeasedTable,
  ManualClock,
  MemoryLeaseSource,
  leaseSettingsOf,
  leaseTermsOf,
  type Algorithm,
  type Decision,
  type PolicyStore,
} from 'floodgate';
import type { Arrivals } from '../arrivals.js';
import { SeededRandom } from '../random.js';
import type { DistributionSpec } from '../scenario.js';
import { StateProbe, StateRecorder } from '../state.js';
import type { FleetRecord, LaneRun, Watch } from './lane-run.js';
import { NodeRouter } from './node-router.js';
import { isCostRefusal, laneRun } from './refuse.js';
import { StoreLink } from './store-link.js';

/** FleetOptions configure a fleet on one shared store, with or without leases. */
export interface FleetOptions {
  readonly algorithm: Algorithm;
  /** The fleet: nodes, round trips, weights, deaths, and `lease` (undefined: every request decided on the store). */
  readonly distribution: DistributionSpec;
  /** Seed of the round-trip jitter draws. */
  readonly seed: number;
}

/** FleetRun is a fleet's {@link LaneRun}, with the node of every request and the fleet's record. */
export interface FleetRun extends LaneRun {
  readonly nodeOf: Int32Array;
  readonly fleet: FleetRecord;
}

/**
 * runFleet returns, for each arrival, the time its node admitted it (NaN: refused, or lost with
 * a node that died), for a fleet sharing one store: the library's lease ledger and per-request
 * table on one state (a {@link MemoryLeaseSource}, on the store's clock), each node reaching it
 * through its own {@link StoreLink} (half a round trip each way). With `distribution.lease`, every
 * node is the library's own `LeasedTable` (what a `LeasedStore` runs): it spends units it holds
 * with no round trip, renews ahead of need, gives back before its lease ends, and falls back to
 * the per-request table; without, every request is decided on the store. Requests go to live
 * nodes by weight ({@link NodeRouter}); a node that dies takes none from then on, and nothing
 * it sends arrives. Time moves from event to event (an arrival, a call reaching the store or
 * coming back, a node's timer, a death) on one manual clock, and every promise settles before it
 * moves again; the same scenario gives the same run.
 */
export async function runFleet(arrivals: Arrivals, options: FleetOptions, watch: Watch): Promise<FleetRun> {
  const fleet = new Fleet(options, watch);
  const admittedAtMs = new Float64Array(arrivals.length).fill(Number.NaN);
  const nodeOf = new Int32Array(arrivals.length);
  for (let i = 0; i < arrivals.length; i++) {
    const t = arrivals.atMs[i]!;
    await fleet.moveTo(t);
    const node = fleet.router.next();
    nodeOf[i] = node;
    const key = arrivals.keys[arrivals.keyIds[i]!]!;
    void fleet.decide(node, key, arrivals.costs[i]!).then((allowed) => {
      const atMs = fleet.clock.now();
      admittedAtMs[i] = allowed ? atMs : Number.NaN;
      watch.recorder.note(i, atMs, fleet.stateOf(key, atMs));
    });
    if (i + 1 === arrivals.length || arrivals.atMs[i + 1]! > t) await settle();
  }
  await fleet.drain();
  fleet.probe(Infinity);
  return { ...laneRun(admittedAtMs, options.distribution.nodes, watch), nodeOf, fleet: fleet.record() };
}

/**
 * runLeaseLane runs a leased fleet ({@link runFleet} with `distribution.lease`) and, as its peer,
 * the same fleet deciding every request on the store (same round trips, weights and deaths; its
 * states not drawn).
 */
export async function runLeaseLane(arrivals: Arrivals, options: FleetOptions, watch: Watch): Promise<FleetRun> {
  const leased = await runFleet(arrivals, options, watch);
  const perRequestOptions = { ...options, distribution: { ...options.distribution, lease: undefined } };
  const perRequest = await runFleet(arrivals, perRequestOptions, throwawayWatch(watch, arrivals.keyIds));
  return { ...leased, perRequest };
}

/** throwawayWatch returns a watch whose readings nobody keeps: for a peer run scored but not drawn. */
export function throwawayWatch(watch: Watch, keyIds: Int32Array): Watch {
  const recorder = new StateRecorder({ keyIds, chartKeyId: -1, stepMs: 1, fuller: 1, keepAll: false });
  return { reading: watch.reading, key: watch.key, probe: new StateProbe(1, 0), recorder };
}

/** The fleet's nodes, their links, the store and the clock, and how time moves among them. */
class Fleet {
  readonly clock = new ManualClock(0);
  readonly router: NodeRouter;
  private readonly store: MemoryLeaseSource;
  private readonly links: StoreLink[];
  private readonly deciders: PolicyStore[];
  private readonly pending: Int32Array;
  private readonly diedAtMs: number[];
  private readonly held: Float64Array[];
  private nextDeath = 0;
  private nextStep = 0;

  constructor(
    private readonly options: FleetOptions,
    private readonly watch: Watch,
  ) {
    const d = options.distribution;
    const settings = leaseSettingsOf(d.lease, 'lease');
    const terms = leaseTermsOf(options.algorithm, settings);
    this.store = new MemoryLeaseSource({ policy: options.algorithm, terms, clock: this.clock });
    const random = new SeededRandom(options.seed);
    const roundTripMs = (): number => d.roundTripMs + d.roundTripJitterMs * random.next();
    this.links = Array.from({ length: d.nodes }, () => new StoreLink(this.store, this.clock, roundTripMs));
    this.deciders = this.links.map((link, i) =>
      d.lease === undefined
        ? link.direct
        : new LeasedTable({
            policy: options.algorithm,
            source: link,
            direct: link.direct,
            settings,
            terms,
            clock: this.clock,
            timers: this.clock,
            holder: `node-${i}`,
          }),
    );
    this.router = new NodeRouter(d.weights);
    this.pending = new Int32Array(d.nodes);
    this.diedAtMs = new Array<number>(d.nodes).fill(Number.NaN);
    this.held = this.links.map(() => new Float64Array(watch.probe.values.length).fill(Number.NaN));
  }

  /** decide resolves to whether `node` admitted `cost` on `key` (false for a cost the policy can never admit); it never settles for a node that died with it. */
  decide(node: number, key: string, cost: number): Promise<boolean> {
    try {
      this.options.algorithm.checkCost(cost);
    } catch (error) {
      if (isCostRefusal(error)) return Promise.resolve(false);
      throw error;
    }
    this.pending[node]!++;
    return Promise.resolve(this.deciders[node]!.consume(key, cost, Number.NaN)).then((d: Decision) => {
      this.pending[node]!--;
      return d.allowed;
    });
  }

  /** stateOf returns the reading of `key`'s shared state at `atMs` (the store's own state; a lease spent on a node changes nothing there). */
  stateOf(key: string, atMs: number): number {
    return this.watch.reading.of!(this.options.algorithm.peek(this.store.stateOf(key).cells, 0, atMs, 0));
  }

  /**
   * moveTo runs every event up to `targetMs` in time order (deaths first at an instant, then the
   * timers due then), letting every promise settle after each instant, and leaves the clock at
   * `targetMs`; the chart key's state is read at each step end on the way.
   */
  async moveTo(targetMs: number): Promise<void> {
    const deaths = this.options.distribution.deaths;
    for (;;) {
      const deathMs = this.nextDeath < deaths.length ? deaths[this.nextDeath]!.atMs : Infinity;
      const nextMs = Math.min(this.clock.nextTimerAtMs() ?? Infinity, deathMs);
      if (nextMs > targetMs) break;
      this.probe(nextMs);
      // A death at an instant comes before the timers due then: answers arriving as it dies are lost.
      if (deathMs <= nextMs) {
        this.kill(deaths[this.nextDeath++]!.node, nextMs);
        continue;
      }
      this.clock.set(Math.max(nextMs, this.clock.now()));
      await settle();
    }
    this.probe(targetMs);
    if (targetMs > this.clock.now()) this.clock.set(targetMs);
  }

  /** drain runs events until every live node has answered every request it took. */
  async drain(): Promise<void> {
    while (this.pending.some((n, node) => n > 0 && Number.isNaN(this.diedAtMs[node]!))) {
      const nextMs = this.clock.nextTimerAtMs();
      if (nextMs === undefined) break;
      await this.moveTo(Math.max(nextMs, this.clock.now()));
    }
  }

  record(): FleetRecord {
    return {
      storeOps: this.links.map((l) => l.ops),
      diedAtMs: [...this.diedAtMs],
      lost: Array.from(this.pending, (n, node) => (Number.isNaN(this.diedAtMs[node]!) ? 0 : n)),
      heldAtStepEnd: this.held,
    };
  }

  /** probe reads the watched key at every step end up to `atMs`: its state, and what each node holds of it on the ledger. */
  probe(atMs: number): void {
    if (atMs < this.watch.probe.nextMs) return;
    this.watch.probe.until(atMs, (at) => {
      const holders = this.store.stateOf(this.watch.key).holders;
      for (let node = 0; node < this.held.length; node++) {
        const h = holders.get(`node-${node}`);
        this.held[node]![this.nextStep] = h !== undefined && h.expiresAtMs > at ? h.held : 0;
      }
      this.nextStep++;
      return this.stateOf(this.watch.key, at);
    });
  }

  private kill(node: number, atMs: number): void {
    this.links[node]!.dead = true;
    this.router.kill(node);
    this.diedAtMs[node] = atMs;
  }
}

/** settle lets every pending promise run; no time passes on the manual clock meanwhile. */
function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
