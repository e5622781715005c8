/** The dashboard's snapshot: what one page or one live update shows, as plain data. */
import type { Board, RateView } from './board.js';
import type { FleetView, ProcessIdentity, ProcessSummary } from './fleet.js';
import type { OverloadView } from './overload.js';
import { SECONDS, RATE_GROUPS } from './rates.js';
import type { ServiceDecisionRow } from './service-decisions.js';
import type { StoreHealthView } from './store-health.js';
import type { UpstreamLatencyView } from './upstream-latency.js';

/** ActiveRule is one rule of the active config as the dashboard lists it. */
export interface ActiveRule {
  readonly route: string;
  readonly rule: string;
  readonly mode: string;
  /** The rule's policy, as its `RateLimit-Policy` item. */
  readonly policy: string;
}

/** DashboardSource is what the dashboard reads of the running gateway. */
export interface DashboardSource {
  readonly board: Board;
  /** rules returns the active config's rules, in config order. */
  rules(): readonly ActiveRule[];
  /** routes returns the active config's route names, in config order. */
  routes(): readonly string[];
  /** The gateway process this dashboard is of (processes sharing a store each have their own). */
  readonly process: ProcessIdentity;
  /** activeConfig returns the running config (secrets redacted), its file and when it was loaded. */
  activeConfig(): { readonly file: string; readonly loadedAt: string; readonly config: unknown };
  isReady(): boolean;
  /** The store's backend: `memory` or `redis`. */
  readonly storeKind: string;
  /** showKey returns how a rule's store key is shown (see `keyShower`). */
  showKey(key: string, route: string, rule: string): string;
}

/** KeyCount is a key with its over-limit rate (decayed) and that rate's error bound, per second. */
export interface KeyCount {
  readonly key: string;
  readonly perSecond: number;
  readonly errorPerSecond: number;
}

/** RuleView is one rule on the dashboard. */
export interface RuleView extends ActiveRule {
  readonly rates: RateView;
  /** Admitted and limited per second over the last minute, oldest first. */
  readonly admittedSeries: readonly number[];
  readonly limitedSeries: readonly number[];
  /** A shadow rule's would-refuse per second over the last minute (undefined for other modes). */
  readonly wouldRefuseSeries?: readonly number[];
  readonly overLimit: readonly KeyCount[];
  /** The error bound of every over-limit rate shown (the sketch's smallest counter), per second. */
  readonly overLimitBoundPerSecond: number;
  readonly near: readonly {
    readonly key: string;
    readonly usedShare: number;
    readonly remaining: number;
    readonly limit: number;
    readonly ageMs: number;
  }[];
  /** A queue-mode rule's waiting line: its depth now, the deepest over the last 10 s, and per second over the last minute. */
  readonly queue?: { readonly depth: number; readonly peak10s: number; readonly peaks: readonly number[] };
}

/** RouteUpstreamView is one route's upstream answer times over the window. */
export interface RouteUpstreamView {
  readonly route: string;
  readonly upstream: UpstreamLatencyView;
}

/** DashboardView is one snapshot of the whole dashboard. */
export interface DashboardView {
  readonly atMs: number;
  readonly startedAtMs: number;
  readonly ready: boolean;
  readonly process: ProcessIdentity;
  readonly rules: readonly RuleView[];
  /** Each route's upstream over the last {@link DashboardView.store}`.windowMs`. */
  readonly upstreams: readonly RouteUpstreamView[];
  /** The rate limit service's decisions per descriptor (empty without a service). */
  readonly service: readonly ServiceDecisionRow[];
  /** Every gateway process on the store (a Redis store only), as each published itself lately. */
  readonly fleet?: FleetView;
  readonly refusals: readonly {
    readonly route: string;
    readonly rule: string;
    readonly key: string;
    readonly limit: number;
    readonly remaining: number;
    readonly retryAfterMs: number;
    readonly reason: string;
    readonly atMs: number;
  }[];
  readonly refusalsTotal: number;
  readonly store: { readonly kind: string; readonly windowMs: number; readonly health: StoreHealthView };
  /** The overload guards in force: each one's samples, figures now and circuit. */
  readonly overload: OverloadView;
  readonly config: { readonly file: string; readonly loadedAt: string; readonly text: string };
}

/** How many keys each top list shows, and how many refusals. */
const TOP = 10;
const REFUSALS_SHOWN = 25;
/** The window of the store's latency figures, in ms. */
const STORE_WINDOW_MS = 10_000;

/** snapshot returns the dashboard as it stands now, keys shown as `source.showKey` says; it also drops the boards of rules no longer in the config. */
export function snapshot(source: DashboardSource): DashboardView {
  const board = source.board;
  const nowMs = board.clock.now();
  const active = source.rules();
  const routes = source.routes();
  board.retain(active);
  board.upstreams.retain(new Set(routes));
  const config = source.activeConfig();
  return {
    atMs: nowMs,
    startedAtMs: board.startedAtMs,
    ready: source.isReady(),
    process: source.process,
    rules: active.map((r) => ruleView(source, r, nowMs)),
    upstreams: routes.map((route) => ({ route, upstream: board.upstreams.view(route, STORE_WINDOW_MS, nowMs) })),
    service: board.service.rows(STORE_WINDOW_MS / 1000, nowMs),
    ...(board.fleet === undefined ? {} : { fleet: board.fleet.view(nowMs) }),
    refusals: board.latestRefusals(REFUSALS_SHOWN).map((f) => ({ ...f, key: source.showKey(f.key, f.route, f.rule) })),
    refusalsTotal: board.refused.total,
    store: { kind: source.storeKind, windowMs: STORE_WINDOW_MS, health: board.store.view(STORE_WINDOW_MS, nowMs) },
    overload: board.overload.view(nowMs),
    config: { file: config.file, loadedAt: config.loadedAt, text: JSON.stringify(config.config, null, 2) },
  };
}

function ruleView(source: DashboardSource, r: ActiveRule, nowMs: number): RuleView {
  const b = source.board.boardOf(r.route, r.rule);
  // A decayed count with half-life h stands for a rate of count * ln 2 / h: a steady rate r settles at r * h / ln 2.
  const perSecond = Math.LN2 / (b.overLimit.halfLifeMs / 1000);
  const show = (key: string): string => source.showKey(key, r.route, r.rule);
  return {
    ...r,
    rates: source.board.rates(r.route, r.rule),
    admittedSeries: b.series.series(RATE_GROUPS.admitted, nowMs).slice(-SECONDS),
    limitedSeries: b.series.series(RATE_GROUPS.limited, nowMs).slice(-SECONDS),
    ...(r.mode === 'shadow'
      ? { wouldRefuseSeries: b.series.series(RATE_GROUPS.wouldRefuse, nowMs).slice(-SECONDS) }
      : {}),
    overLimit: b.overLimit
      .top(TOP, nowMs)
      .map((h) => ({ key: show(h.key), perSecond: h.count * perSecond, errorPerSecond: h.error * perSecond })),
    overLimitBoundPerSecond: b.overLimit.minCount(nowMs) * perSecond,
    near: b.near.top(TOP, nowMs).map((n) => ({
      key: show(n.key),
      usedShare: n.usedShare,
      remaining: n.remaining,
      limit: n.limit,
      ageMs: nowMs - n.atMs,
    })),
    ...(r.mode === 'queue'
      ? { queue: { depth: b.queue.depth, peak10s: b.queue.peak(10, nowMs), peaks: b.queue.series(nowMs) } }
      : {}),
  };
}

/** processSummary returns what this process publishes of itself to the others on its store: its rules' rates and queues now. */
export function processSummary(source: DashboardSource): ProcessSummary {
  const board = source.board;
  const nowMs = board.clock.now();
  const p = source.process;
  return {
    host: p.host,
    pid: p.pid,
    port: p.port,
    adminPort: p.adminPort,
    startedAtMs: board.startedAtMs,
    atMs: nowMs,
    ready: source.isReady(),
    rules: source.rules().map((r) => {
      const rates = board.rates(r.route, r.rule);
      return {
        route: r.route,
        rule: r.rule,
        admitted: rates.admitted.perSecond,
        limited: rates.limited.perSecond,
        wouldRefuse: rates.wouldRefuse.perSecond,
        degraded: rates.degraded.perSecond,
        queued: board.boardOf(r.route, r.rule).queue.depth,
      };
    }),
  };
}
