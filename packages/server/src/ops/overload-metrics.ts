/**
 * The overload protection's Prometheus metrics: each concurrency limit's limit, calls in flight and
 * waiting, and its estimator's latencies, read from the limiters at each scrape; sheds and circuit
 * transitions counted in plain numbers as they happen and handed over at each scrape.
 */
import type { ConcurrencySnapshot } from 'floodgate';
import { Counter, Gauge, type Registry } from 'prom-client';
import { PendingCounts } from './label-children.js';

/** GuardView is what the metrics read of one protected scope (a route's or an upstream's) at a scrape. */
export interface GuardView {
  /** `route:<name>` or `upstream:<name>`. */
  readonly scope: string;
  readonly limiter: { snapshot(): ConcurrencySnapshot } | undefined;
  readonly breaker: { readonly state: string } | undefined;
}

const CIRCUIT_VALUE: Readonly<Record<string, number>> = { closed: 0, 'half-open': 1, open: 2 };

/** OverloadMetrics holds the overload metrics of one gateway, on its registry. */
export class OverloadMetrics {
  /** guards returns the scopes protected now; the gateway sets it, each scrape reads it. */
  guards: () => Iterable<GuardView> = () => [];
  private readonly shedCounts: PendingCounts;
  private readonly transitionCounts: PendingCounts;

  constructor(registry: Registry) {
    const registers = [registry];
    const gauge = (name: string, help: string, value: (s: ConcurrencySnapshot) => number | undefined): void => {
      const g: Gauge = new Gauge({
        name,
        help,
        labelNames: ['scope'],
        registers,
        collect: () => this.collectLimiters(g, value),
      });
    };
    gauge(
      'floodgate_concurrency_limit',
      'Requests a concurrency limit lets in flight now, per route or upstream (scope).',
      (s) => s.limit,
    );
    gauge('floodgate_concurrency_in_flight', 'Requests holding a slot of a concurrency limit.', (s) => s.inFlight);
    gauge('floodgate_concurrency_queued', 'Requests waiting for a slot of a concurrency limit.', (s) => s.queued);
    gauge(
      'floodgate_concurrency_rtt_baseline_seconds',
      "An adaptive limit's estimate of the upstream's latency without queueing.",
      (s) => seconds(s.adaptive?.baselineRttMs),
    );
    gauge('floodgate_concurrency_rtt_sample_seconds', "An adaptive limit's last window's median latency.", (s) =>
      seconds(s.adaptive?.sampleRttMs),
    );
    const circuit: Gauge = new Gauge({
      name: 'floodgate_circuit_state',
      help: 'Circuit breaker per route or upstream (scope): 0 closed, 1 half-open, 2 open.',
      labelNames: ['scope'],
      registers,
      collect: () => this.collectCircuits(circuit),
    });
    const shed = new Counter({
      name: 'floodgate_concurrency_shed_total',
      help: 'Requests refused for overload, by scope, priority tier and reason (limit, queue-full, queue-timeout, aborted, circuit-open).',
      labelNames: ['scope', 'tier', 'reason'],
      registers,
      collect: () => this.shedCounts.flush(),
    });
    const transitions = new Counter({
      name: 'floodgate_circuit_transitions_total',
      help: 'Circuit breaker state changes, by scope and the state entered.',
      labelNames: ['scope', 'to'],
      registers,
      collect: () => this.transitionCounts.flush(),
    });
    this.shedCounts = new PendingCounts((scope, tier, reason) => shed.labels(scope, tier, reason));
    this.transitionCounts = new PendingCounts((scope, to) => transitions.labels(scope, to));
  }

  /** shed counts one request refused for overload in `scope`. */
  shed(scope: string, tier: string, reason: string): void {
    this.shedCounts.children.of(scope, tier, reason).pending++;
  }

  /** circuitTransition counts one change of a circuit's state. */
  circuitTransition(scope: string, to: string): void {
    this.transitionCounts.children.of(scope, to, '').pending++;
  }

  private collectLimiters(gauge: Gauge, value: (s: ConcurrencySnapshot) => number | undefined): void {
    // Reset first: a scope removed by a reload leaves the output.
    gauge.reset();
    for (const g of this.guards()) {
      const v = g.limiter === undefined ? undefined : value(g.limiter.snapshot());
      if (v !== undefined) gauge.set({ scope: g.scope }, v);
    }
  }

  private collectCircuits(gauge: Gauge): void {
    gauge.reset();
    for (const g of this.guards())
      if (g.breaker !== undefined) gauge.set({ scope: g.scope }, CIRCUIT_VALUE[g.breaker.state] ?? 0);
  }
}

function seconds(ms: number | undefined): number | undefined {
  return ms === undefined ? undefined : ms / 1000;
}
