/**
 * A fleet of leasing nodes in one process on a manual clock: each node is a LeasedTable over its
 * own link to one MemoryLeaseSource (the shared state), with a one-way delay. A link can be cut
 * (the node dies: nothing it sends arrives). The harness drives each node at its rate, millisecond
 * by millisecond, and records every decision with its time.
 */
import {
  LeasedTable,
  ManualClock,
  MemoryLeaseSource,
  leaseSettingsOf,
  leaseTermsOf,
  type Algorithm,
  type Decision,
  type LeaseAnswer,
  type LeaseAsk,
  type LeaseOptions,
  type LeaseReturn,
  type LeaseSource,
  type LeaseTerms,
  type PolicyStore,
} from '../../src/index.js';

/** A link from one node to the shared source; `dead` drops everything sent (the node is gone). */
export class Link implements LeaseSource {
  dead = false;
  calls = 0;
  /** Every answer this link received, in order. */
  readonly answers: LeaseAnswer[] = [];
  constructor(private readonly source: MemoryLeaseSource) {}
  ask(key: string, ask: LeaseAsk): Promise<LeaseAnswer> {
    if (this.dead) return new Promise(() => undefined);
    this.calls++;
    return this.source.ask(key, ask).then((answer) => {
      this.answers.push(answer);
      return answer;
    });
  }
  giveBack(key: string, back: LeaseReturn): Promise<number> {
    if (this.dead) return new Promise(() => undefined);
    this.calls++;
    return this.source.giveBack(key, back);
  }
}

/** A direct table that admits everything, saying so (a store whose failure policy is fail-open). */
export const FAIL_OPEN: PolicyStore = {
  synchronous: false,
  consume: (_key, _cost) =>
    Promise.resolve({ allowed: true, limit: 0, remaining: 0, retryAfterMs: 0, resetMs: 0, reason: 'fail-open' }),
  peek: (_key, _cost) =>
    Promise.resolve({ allowed: true, limit: 0, remaining: 0, retryAfterMs: 0, resetMs: 0, reason: 'fail-open' }),
  refund: () => Promise.resolve(),
  reset: () => Promise.resolve(),
};

/** directOf returns the per-request table on the source's shared state, answering fail-open while the source is down (as a store's failure policy would). */
function directOf(source: MemoryLeaseSource): PolicyStore {
  const table = source.direct();
  return {
    synchronous: false,
    consume: (key, cost, nowMs) =>
      source.down ? FAIL_OPEN.consume(key, cost, nowMs) : table.consume(key, cost, nowMs),
    peek: (key, cost, nowMs) => (source.down ? FAIL_OPEN.peek(key, cost, nowMs) : table.peek(key, cost, nowMs)),
    refund: (key, cost, nowMs) => table.refund(key, cost, nowMs),
    reset: (key) => table.reset(key),
  };
}

export interface Fleet {
  readonly clock: ManualClock;
  readonly source: MemoryLeaseSource;
  readonly terms: LeaseTerms;
  readonly links: Link[];
  readonly tables: LeasedTable[];
}

/** START_MS is where every fleet's clock starts. */
export const START_MS = 1_000_000;

/** makeFleet builds `nodes` leasing nodes on one shared source for `policy`. */
export function makeFleet(policy: Algorithm, nodes: number, options: LeaseOptions & { delayMs?: number } = {}): Fleet {
  const clock = new ManualClock(START_MS);
  const settings = leaseSettingsOf(options, 'lease');
  const terms = leaseTermsOf(policy, settings);
  const source = new MemoryLeaseSource({ policy, terms, clock, timers: clock, delayMs: options.delayMs ?? 1 });
  const links: Link[] = [];
  const tables: LeasedTable[] = [];
  for (let i = 0; i < nodes; i++) {
    const link = new Link(source);
    links.push(link);
    tables.push(
      new LeasedTable({
        policy,
        source: link,
        direct: directOf(source),
        settings,
        terms,
        clock,
        timers: clock,
        holder: `node-${i}`,
      }),
    );
  }
  return { clock, source, terms, links, tables };
}

/** Admission is one decided request: when it was sent and answered, by which node, and the decision. */
export interface Admission {
  readonly node: number;
  readonly sentAtMs: number;
  readonly atMs: number;
  readonly cost: number;
  readonly decision: Decision;
}

/** settle lets every pending promise run (no time passes on the manual clock). */
export function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * drive sends, for `durationMs` ms of the manual clock, `perMs[i]` requests per ms (fractions
 * accumulate) from node i on `key`, moving the clock 1 ms at a time, and returns every decision.
 * A node whose rate is 0 sends nothing.
 */
export async function drive(
  fleet: Fleet,
  key: string,
  perMs: readonly number[],
  durationMs: number,
): Promise<Admission[]> {
  const out: Admission[] = [];
  const owed = perMs.map(() => 0);
  for (let t = 0; t < durationMs; t++) {
    for (let i = 0; i < perMs.length; i++) {
      owed[i]! += perMs[i]!;
      while (owed[i]! >= 1) {
        owed[i]! -= 1;
        const sentAtMs = fleet.clock.now();
        const node = i;
        void Promise.resolve(fleet.tables[i]!.consume(key, 1, Number.NaN)).then((decision) =>
          out.push({ node, sentAtMs, atMs: fleet.clock.now(), cost: 1, decision }),
        );
      }
    }
    await settle();
    fleet.clock.advance(1);
    await settle();
  }
  for (let i = 0; i < 20; i++) {
    fleet.clock.advance(1);
    await settle();
  }
  return out;
}

/**
 * overBucket returns the most admitted cost above `ratePerMs` × span over any span of time, less
 * `capacity`: how far the admissions exceed a token bucket's promise (capacity + rate × span);
 * 0 or below means never.
 */
export function overBucket(admitted: readonly Admission[], capacity: number, ratePerMs: number): number {
  const times = admitted
    .filter((a) => a.decision.allowed)
    .map((a) => a.atMs)
    .sort((x, y) => x - y);
  let best = -Infinity;
  let run = -Infinity;
  for (let j = 0; j < times.length; j++) {
    run = j === 0 ? 1 : Math.max(1, run + 1 - ratePerMs * (times[j]! - times[j - 1]!));
    best = Math.max(best, run);
  }
  return best - capacity;
}

/** perWindow returns the admitted cost in each aligned window of `windowMs`, by when it was admitted. */
export function perWindow(admitted: readonly Admission[], windowMs: number): Map<number, number> {
  const counts = new Map<number, number>();
  for (const a of admitted) {
    if (!a.decision.allowed) continue;
    const w = Math.floor(a.atMs / windowMs);
    counts.set(w, (counts.get(w) ?? 0) + a.cost);
  }
  return counts;
}
