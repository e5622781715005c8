/**
 * The gateway's Prometheus metrics (prom-client, on a registry of its own): decisions by route,
 * rule and outcome; store latency, errors and circuit state; upstream latency and status; queue depth;
 * and the overload protection's (`overload-metrics.ts`).
 */
import type { CircuitEvent, Observer } from 'floodgate';
import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import type { DecisionReporter, RuleOutcome } from '../outcomes.js';
import { LabelledHistogram } from './histogram.js';
import { PendingCounts } from './label-children.js';
import { OverloadMetrics } from './overload-metrics.js';

const CIRCUIT_VALUE: Record<CircuitEvent['state'], number> = { closed: 0, 'half-open': 1, open: 2 };

/** MetricsTap hears what the metrics count that the dashboard also shows: upstream answers and the rate limit service's decisions. */
export interface MetricsTap {
  upstream(route: string, status: number, upstreamMs: number): void;
  serviceDecision(domain: string, descriptor: string, outcome: string): void;
}

/** GatewayMetrics holds every metric of one gateway process and feeds them. */
export class GatewayMetrics implements DecisionReporter {
  readonly registry = new Registry();
  /** tap, when set (by the dashboard), hears each upstream answer and service decision counted here. */
  tap: MetricsTap | undefined;
  private readonly decisions = new Counter({
    name: 'floodgate_decisions_total',
    help: "Rate-limit decisions by route, rule and outcome (admitted, near_limit, limited, shadow_admitted, shadow_limited, queued, queue_rejected, fail_open, fail_closed, and while the store is away fallback_admitted, fallback_limited: the local fallback deciding with this process's share; identity_refused, shadow_identity_refused: refused, or would be, for an absent or invalid identity; identity_skipped: the rule set to skip such a request; refunded: an admitted request given back its cost, the gateway having answered it with a status the rule's refundOn lists).",
    labelNames: ['route', 'rule', 'outcome'],
    registers: [this.registry],
    collect: (): void => this.decisionCounts.flush(),
  });
  private readonly serviceDecisions = new Counter({
    name: 'floodgate_ratelimit_service_decisions_total',
    help: 'Decisions of the rate limit service (Envoy gRPC and JSON API) by domain, descriptor (its configured path after the domain; a wildcard by its pattern) and outcome (admitted, limited, shadow_limited and quota_limited: over the limit but answered OK, fail_open, fail_closed, store_full, fallback: the local fallback decided while the store was away; peek_ before those only asked).',
    labelNames: ['domain', 'descriptor', 'outcome'],
    registers: [this.registry],
    collect: (): void => this.serviceCounts.flush(),
  });
  private readonly storeSeconds = new LabelledHistogram({
    name: 'floodgate_store_duration_seconds',
    help: 'Round trips to the rate-limit store.',
    labelNames: ['operation', 'result'],
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1],
    registry: this.registry,
  });
  private readonly storeErrors = new Counter({
    name: 'floodgate_store_errors_total',
    help: 'Store failures, by the failure policy that answered instead.',
    labelNames: ['policy'],
    registers: [this.registry],
  });
  private readonly circuit = new Gauge({
    name: 'floodgate_store_circuit_state',
    help: 'Store circuit breaker per node: 0 closed, 1 half-open, 2 open.',
    labelNames: ['node'],
    registers: [this.registry],
  });
  private readonly upstreamSeconds = new LabelledHistogram({
    name: 'floodgate_upstream_duration_seconds',
    help: 'Time from forwarding a request to the end of its response.',
    labelNames: ['route', 'status'],
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registry: this.registry,
  });
  private readonly responses = new Counter({
    name: 'floodgate_responses_total',
    help: 'Responses sent, by route and status code.',
    labelNames: ['route', 'status'],
    registers: [this.registry],
    collect: (): void => this.responseCounts.flush(),
  });
  private readonly queue = new Gauge({
    name: 'floodgate_queue_depth',
    help: 'Requests waiting in a queued rule.',
    labelNames: ['route', 'rule'],
    registers: [this.registry],
  });
  private readonly reloads = new Counter({
    name: 'floodgate_config_reloads_total',
    help: 'Config reloads by result (applied or rejected).',
    labelNames: ['result'],
    registers: [this.registry],
  });
  private readonly ready = new Gauge({
    name: 'floodgate_ready',
    help: '1 when the gateway is ready to serve.',
    registers: [this.registry],
    // Summed over workers by the primary's /metrics: ready when every worker is.
    aggregator: 'min',
  });
  /** The overload protection's metrics: concurrency limits, sheds and circuits. */
  readonly overload = new OverloadMetrics(this.registry);
  /** inFlightCount returns the requests being served now; the gateway sets it, the scrape reads it. */
  inFlightCount: () => number = () => 0;
  private readonly inFlight: Gauge = new Gauge({
    name: 'floodgate_in_flight_requests',
    help: 'Requests being served now.',
    registers: [this.registry],
    collect: (): void => this.inFlight.set(this.inFlightCount()),
  });

  constructor() {
    collectDefaultMetrics({ register: this.registry });
  }

  /** observer is the library's {@link Observer} feeding these metrics, for stores that report through it. */
  readonly observer: Observer = {
    storeCall: (e) => this.storeCall(e.operation, e.durationMs, e.ok),
    storeError: (e) => this.storeErrors.inc({ policy: e.policy }),
    circuit: (e) => this.circuit.set({ node: e.node ?? 'default' }, CIRCUIT_VALUE[e.state]),
  };

  // Counted per request in plain numbers, handed to prom-client at each scrape (its `inc` validates and hashes per call).
  private readonly decisionCounts = new PendingCounts((route, rule, outcome) =>
    this.decisions.labels(route, rule, outcome),
  );
  private readonly serviceCounts = new PendingCounts((domain, descriptor, outcome) =>
    this.serviceDecisions.labels(domain, descriptor, outcome),
  );
  private readonly responseCounts = new PendingCounts((route, status) => this.responses.labels(route, status));

  /** outcome counts one rule's answer to one request. */
  outcome(route: string, rule: string, outcome: RuleOutcome): void {
    this.decisionCounts.children.of(route, rule, outcome).pending++;
  }

  /** serviceDecision counts one descriptor decided by the rate limit service. */
  serviceDecision(domain: string, descriptor: string, outcome: string): void {
    this.serviceCounts.children.of(domain, descriptor, outcome).pending++;
    this.tap?.serviceDecision(domain, descriptor, outcome);
  }

  /** storeCall records one store round trip's duration. */
  storeCall(operation: string, durationMs: number, ok: boolean): void {
    const result = ok ? 'ok' : 'error';
    this.storeSeconds.of(operation, result).observe(durationMs / 1000);
  }

  /** queueDepth moves a queued rule's depth by `delta`. */
  queueDepth(route: string, rule: string, delta: number): void {
    this.queue.inc({ route, rule }, delta);
  }

  /** response counts one response, and its upstream time when it was forwarded. */
  response(route: string, status: number, upstreamMs: number | undefined): void {
    this.responseCounts.children.of(route, status, '').pending++;
    if (upstreamMs === undefined) return;
    this.upstreamSeconds.of(route, status).observe(upstreamMs / 1000);
    this.tap?.upstream(route, status, upstreamMs);
  }

  /** reload counts one config reload, applied or rejected. */
  reload(applied: boolean): void {
    this.reloads.inc({ result: applied ? 'applied' : 'rejected' });
  }

  /** setReady sets the readiness gauge. */
  setReady(ready: boolean): void {
    this.ready.set(ready ? 1 : 0);
  }
}
