/**
 * The dashboard fitted into a gateway: its endpoints, a decision reporter feeding both metrics and
 * the board, and the board's sampling of the overload guards.
 */
import { hostname } from 'node:os';
import type { Registry } from 'prom-client';
import type { DecisionReporter } from '../outcomes.js';
import type { MetricsTap } from '../ops/metrics.js';
import type { RouteTable } from '../gateway/routes.js';
import type { Board } from './board.js';
import { FleetBoard, type ProcessRegistry } from './fleet.js';
import { DashboardEndpoints } from './http.js';
import { keyShower, type KeyDisplay } from './keys.js';
import type { OverloadSource } from './overload.js';
import type { ProcessIdentity } from './fleet.js';
import { processSummary, type DashboardSource } from './view.js';

/** DashboardSettings are the config's `admin.dashboard` settings. */
export interface DashboardSettings {
  readonly enabled: boolean;
  readonly keys: KeyDisplay;
}

/** MountOptions is what {@link mountDashboard} needs of the gateway. */
export interface MountOptions {
  readonly board: Board;
  /**
   * The reporter decisions already go to (the metrics), with the registry the sheds are counted in
   * and the tap the dashboard hears upstream answers and the rate limit service's decisions on.
   */
  readonly metrics: DecisionReporter & { readonly registry: Registry; tap: MetricsTap | undefined };
  /** The SHA-256 of the admin token; undefined when there is none (then there is no dashboard). */
  readonly tokenDigest: Buffer | undefined;
  readonly settings: DashboardSettings | undefined;
  readonly storeKind: string;
  /** table returns the active route table (it changes on reload), with its overload guards. */
  table(): RouteTable;
  activeConfig: DashboardSource['activeConfig'];
  isReady(): boolean;
  /** The ports this process listens on, once it does (they name the process on its dashboard). */
  ports?(): { readonly port: number | undefined; readonly adminPort: number | undefined };
  /** The store's process registry (a Redis store has one): then every process on the store is shown. */
  readonly registry?: ProcessRegistry;
}

/** MountedDashboard is the dashboard's endpoints and the reporter to decide with. */
export interface MountedDashboard {
  readonly endpoints: DashboardEndpoints;
  readonly reporter: DecisionReporter;
}

/**
 * mountDashboard returns the dashboard's endpoints and the reporter that feeds it beside the
 * metrics, or undefined when the dashboard is off (no admin token, or `admin.dashboard.enabled:
 * false`): then decisions go to the metrics alone and cost nothing more. When mounted, the board
 * samples the guards of the active table once a second until `board.close()`.
 *
 * @example
 * const mounted = mountDashboard({ board, metrics, tokenDigest, settings: config.admin?.dashboard, storeKind: 'memory', table: () => gateway.table, activeConfig, isReady });
 */
export function mountDashboard(options: MountOptions): MountedDashboard | undefined {
  if (options.tokenDigest === undefined || options.settings?.enabled === false) return undefined;
  const { board, metrics } = options;
  const source: DashboardSource = {
    board,
    rules: () =>
      options
        .table()
        .routes.flatMap((route) =>
          route.rules.map((r) => ({ route: route.name, rule: r.name, mode: r.mode, policy: r.policyItem })),
        ),
    routes: () => options.table().routes.map((route) => route.name),
    process: processIdentity(options.ports),
    activeConfig: options.activeConfig,
    isReady: options.isReady,
    storeKind: options.storeKind,
    showKey: keyShower(options.settings?.keys ?? 'full'),
  };
  const reporter: DecisionReporter = {
    outcome(route, rule, outcome) {
      metrics.outcome(route, rule, outcome);
      board.outcome(route, rule, outcome);
    },
    queueDepth(route, rule, delta) {
      metrics.queueDepth(route, rule, delta);
      board.queueDepth(route, rule, delta);
    },
    decided: (event) => board.decided(event),
  };
  metrics.tap = {
    upstream: (route, status, upstreamMs) => board.upstream(route, status, upstreamMs),
    serviceDecision: (domain, descriptor, outcome) => board.serviceDecision(domain, descriptor, outcome),
  };
  board.overload.follow({ guards: () => options.table().guards.all, shedTotals: shedTotalsOf(metrics.registry) });
  if (options.registry !== undefined)
    board.followFleet(
      new FleetBoard({ clock: board.clock, registry: options.registry, summary: () => processSummary(source) }),
    );
  return { endpoints: new DashboardEndpoints({ source, tokenDigest: options.tokenDigest }), reporter };
}

/** processIdentity returns this process's name on its dashboard: host, pid, and its ports once it listens. */
function processIdentity(ports: MountOptions['ports']): ProcessIdentity {
  const host = hostname();
  return {
    host,
    pid: process.pid,
    get port() {
      return ports?.().port;
    },
    get adminPort() {
      return ports?.().adminPort;
    },
  };
}

/** The shed counter of the gateway's metrics (see `ops/overload-metrics.ts`). */
const SHED_METRIC = 'floodgate_concurrency_shed_total';

/**
 * shedTotalsOf returns a reader of the gateway's shed counter, every count since the start by
 * scope and reason: the board reads it once a second, so a shed costs its request nothing more
 * than the metrics' own count.
 */
function shedTotalsOf(registry: Registry): OverloadSource['shedTotals'] {
  return async () => {
    const metric = registry.getSingleMetric(SHED_METRIC);
    if (metric === undefined) return [];
    const { values } = await metric.get();
    return values.map((v) => ({ scope: String(v.labels.scope), reason: String(v.labels.reason), total: v.value }));
  };
}
