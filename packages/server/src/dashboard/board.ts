/**
 * The dashboard's memory: per route and rule, the outcome rates, the keys most often over their
 * limit (space-saving) and those nearest it; the recent refusals; the store's health. All of it
 * bounded, fed by the gateway's decision reporter and the store's observer, read as snapshots.
 */
import { systemClock, type Clock, type Observer, type Timers } from 'floodgate';
import type { RuleDecision, RuleOutcome } from '../outcomes.js';
import type { FleetBoard } from './fleet.js';
import { NearLimit } from './near-limit.js';
import { OverloadBoard } from './overload.js';
import { QueueDepth } from './queue-depth.js';
import { OutcomeSeries, RATE_GROUPS, type RateGroup } from './rates.js';
import { RefusalRing, type Refusal } from './refusals.js';
import { ServiceDecisions } from './service-decisions.js';
import { SpaceSaving } from './space-saving.js';
import { StoreHealth } from './store-health.js';
import { UpstreamLatency } from './upstream-latency.js';

/** BoardOptions configures a {@link Board}; every bound has a default. */
export interface BoardOptions {
  /** The clock, in ms since the epoch (default the system clock). */
  readonly clock?: Clock;
  /** Keys monitored per rule by the over-limit sketch (default 64). */
  readonly sketchCapacity?: number;
  /** Keys held per rule as nearest their limit (default 32). */
  readonly nearCapacity?: number;
  /** How long an over-limit event takes to count half as much, in ms (default 10,000). */
  readonly halfLifeMs?: number;
  /** How long a key stays "near its limit" after its latest decision, in ms (default 10,000). */
  readonly staleMs?: number;
  /** How many recent refusals are kept (default 200). */
  readonly refusals?: number;
  /** The overload sampler's timer (default the clock when it is also `Timers`, else unref'd `setTimeout`s). */
  readonly timers?: Timers;
  /** One-second samples kept per overload guard (default 120). */
  readonly overloadSeconds?: number;
}

/** RuleBoard is the dashboard's memory of one route's rule. */
export interface RuleBoard {
  readonly route: string;
  readonly rule: string;
  readonly series: OutcomeSeries;
  readonly overLimit: SpaceSaving;
  readonly near: NearLimit;
  /** The rule's waiting line (a queue-mode rule's; it stays at 0 for the others). */
  readonly queue: QueueDepth;
}

/** RateView is one rule's rates per group: per second over the last 10 s, and totals since the start. */
export type RateView = Readonly<Record<RateGroup, { readonly perSecond: number; readonly total: number }>>;

/**
 * Board returns the dashboard's state of one gateway process and takes its events: give it as
 * the traffic's `DecisionReporter` (beside metrics) and {@link Board.observer} to the store.
 * Memory is bounded whatever the traffic: per rule, 60 x 14 counts, 60 queue depths, `sketchCapacity` and
 * `nearCapacity` keys; `refusals` entries; 2,048 store round trips; 1,024 upstream answers per
 * route; the rate limit service's counts per descriptor (at most 256); per overload guard in force,
 * `overloadSeconds` samples and 8 circuit changes. Keys are held as the store
 * names them (at most 256 characters); how they are shown is the renderer's choice.
 *
 * @example
 * const board = new Board();
 * board.outcome('api', 'per-ip', 'limited');
 * board.rates('api', 'per-ip').limited.total; // 1
 */
export class Board {
  readonly clock: Clock;
  readonly refused: RefusalRing;
  readonly store: StoreHealth;
  /** The overload guards' samples and circuit changes: it samples once it follows the gateway's guards. */
  readonly overload: OverloadBoard;
  /** observer is the store's seam into {@link Board.store}. */
  readonly observer: Observer;
  /** Each route's upstream answer times, lately. */
  readonly upstreams = new UpstreamLatency();
  /** The rate limit service's decisions, when the gateway runs one. */
  readonly service = new ServiceDecisions();
  /** The processes sharing the store, once {@link Board.followFleet} was called (a Redis store). */
  fleet: FleetBoard | undefined;
  readonly startedAtMs: number;
  /** Boards by route, then rule: two lookups and no string built per decision. */
  private readonly boards = new Map<string, Map<string, RuleBoard>>();
  private readonly options: Required<Omit<BoardOptions, 'clock' | 'refusals' | 'timers' | 'overloadSeconds'>>;

  constructor(options: BoardOptions = {}) {
    this.clock = options.clock ?? systemClock;
    this.refused = new RefusalRing(options.refusals ?? 200);
    this.store = new StoreHealth(() => this.clock.now());
    this.observer = this.store.observer;
    this.overload = new OverloadBoard({ clock: this.clock, timers: options.timers, seconds: options.overloadSeconds });
    this.startedAtMs = this.clock.now();
    this.options = {
      sketchCapacity: options.sketchCapacity ?? 64,
      nearCapacity: options.nearCapacity ?? 32,
      halfLifeMs: options.halfLifeMs ?? 10_000,
      staleMs: options.staleMs ?? 10_000,
    };
  }

  /** outcome counts one rule's outcome for one request, now. */
  outcome(route: string, rule: string, outcome: RuleOutcome): void {
    this.boardOf(route, rule).series.add(outcome, this.clock.now());
  }

  /** queueDepth moves a queue-mode rule's waiting line by `delta` (+1 joined, -1 left), now. */
  queueDepth(route: string, rule: string, delta: number): void {
    this.boardOf(route, rule).queue.move(delta, this.clock.now());
  }

  /** upstream takes one forwarded request's answer from `route`'s upstream: its status and time, in ms. */
  upstream(route: string, status: number, upstreamMs: number): void {
    this.upstreams.record(route, status, upstreamMs, this.clock.now());
  }

  /** serviceDecision counts one descriptor decided by the rate limit service (its metrics' outcome names). */
  serviceDecision(domain: string, descriptor: string, outcome: string): void {
    this.service.record(domain, descriptor, outcome, this.clock.now());
  }

  /**
   * decided takes one rule's decision with its key: the nearest keys (decisions by the policy
   * only, not by a store's failure policy), the over-limit sketch (refusals by the policy or a full
   * or timed-out queue, shadow ones included) and the refusal ring (every enforced refusal,
   * fail-closed and the local fallback's included).
   */
  decided(e: RuleDecision): void {
    const nowMs = this.clock.now();
    const board = this.boardOf(e.route, e.rule);
    const d = e.decision;
    const degraded =
      e.outcome === 'fail_open' ||
      e.outcome === 'fail_closed' ||
      e.outcome === 'fallback_admitted' ||
      e.outcome === 'fallback_limited';
    if (d !== undefined && !degraded) board.near.observe(e.key, d, nowMs);
    if (e.outcome === 'limited' || e.outcome === 'shadow_limited' || e.outcome === 'queue_rejected')
      board.overLimit.add(e.key, 1, nowMs);
    if (
      e.outcome !== 'limited' &&
      e.outcome !== 'queue_rejected' &&
      e.outcome !== 'fail_closed' &&
      e.outcome !== 'fallback_limited'
    )
      return;
    this.refused.record({
      route: e.route,
      rule: e.rule,
      key: e.key,
      limit: d?.limit ?? 0,
      remaining: d?.remaining ?? 0,
      retryAfterMs: d?.retryAfterMs ?? 0,
      reason: e.reason,
      atMs: nowMs,
    });
  }

  /**
   * shed records a request the overload protection of `scope` (`route:api`, `upstream:demo`)
   * refused, among the recent refusals: under the scope, rule `overload`, keyed by its tier (a
   * shed request is refused by no rule, and counted before any key was read).
   */
  shed(scope: string, tier: string, reason: string): void {
    this.refused.record({
      route: scope,
      rule: 'overload',
      key: `tier:${tier}`,
      limit: 0,
      remaining: 0,
      retryAfterMs: 0,
      reason,
      atMs: this.clock.now(),
    });
  }

  /** rates returns a rule's rates now (per second over the last `windowSeconds` whole seconds, or those since the start); zeros for a rule not seen yet. */
  rates(route: string, rule: string, windowSeconds = 10): RateView {
    const series = this.boardOf(route, rule).series;
    const nowMs = this.clock.now();
    // Seconds before the board began would count as idle ones: average over the seconds it has seen.
    const seen = Math.floor(nowMs / 1000) - Math.floor(this.startedAtMs / 1000);
    const window = Math.max(1, Math.min(windowSeconds, seen));
    const view = {} as Record<RateGroup, { perSecond: number; total: number }>;
    for (const group of Object.keys(RATE_GROUPS) as RateGroup[]) {
      const outcomes = RATE_GROUPS[group];
      view[group] = {
        perSecond: series.perSecond(outcomes, window, nowMs),
        total: outcomes.reduce((n, o) => n + series.total(o), 0),
      };
    }
    return view;
  }

  /** boardOf returns a rule's board, made on first use. */
  boardOf(route: string, rule: string): RuleBoard {
    let rules = this.boards.get(route);
    if (rules === undefined) this.boards.set(route, (rules = new Map()));
    let board = rules.get(rule);
    if (board === undefined) {
      const o = this.options;
      board = {
        route,
        rule,
        series: new OutcomeSeries(),
        overLimit: new SpaceSaving({ capacity: o.sketchCapacity, halfLifeMs: o.halfLifeMs }),
        near: new NearLimit({ capacity: o.nearCapacity, staleMs: o.staleMs }),
        queue: new QueueDepth(),
      };
      rules.set(rule, board);
    }
    return board;
  }

  /** retain forgets the boards of rules not in `active` (route and rule names), after a reload removed them. */
  retain(active: readonly { readonly route: string; readonly rule: string }[]): void {
    const keep = new Set(active.map((r) => `${r.route}\0${r.rule}`));
    for (const [route, rules] of this.boards) {
      for (const rule of rules.keys()) if (!keep.has(`${route}\0${rule}`)) rules.delete(rule);
      if (rules.size === 0) this.boards.delete(route);
    }
  }

  /** followFleet starts `fleet`'s rounds (publishing this process, reading the others) until {@link Board.close}. */
  followFleet(fleet: FleetBoard): void {
    this.fleet?.stop();
    this.fleet = fleet;
    fleet.start();
  }

  /** close stops the board's timers: the overload sampler's and the fleet's. */
  close(): void {
    this.overload.stop();
    this.fleet?.stop();
  }

  /** latestRefusals returns up to `n` recent refusals, newest first. */
  latestRefusals(n: number): Refusal[] {
    return this.refused.latest(n);
  }
}
