/**
 * The standalone rate limit service's Prometheus metrics (`floodgate ratelimit --metrics-port`),
 * on a registry of its own: decisions by domain, descriptor (its configured path) and outcome,
 * near-limit hits, requests by answer, config loads and whether the store answers.
 */
import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import { PendingCounts } from '../../ops/label-children.js';
import { DescriptorLabels, outcomeLabel } from './metric-labels.js';
import type { DescriptorOutcome } from './outcome.js';

/**
 * RateLimitMetrics counts what the service decides. Metric names match the gateway's where they
 * are the same thing (`floodgate_ratelimit_service_decisions_total`).
 *
 * @example
 * const metrics = new RateLimitMetrics();
 * const service = createRateLimitService({ domains, onOutcome: (o) => metrics.outcome(o) });
 */
export class RateLimitMetrics {
  /** registry holds every metric; serve `registry.metrics()` at `/metrics`. */
  readonly registry = new Registry();
  private readonly labels = new DescriptorLabels();
  private readonly decisions = new Counter({
    name: 'floodgate_ratelimit_service_decisions_total',
    help: 'Descriptors decided by the rate limit service, by domain, descriptor (its configured path after the domain; a wildcard by its pattern) and outcome (admitted, limited, shadow_limited, quota_limited, fallback, fail_open, fail_closed, store_full; peek_ before those only asked).',
    labelNames: ['domain', 'descriptor', 'outcome'],
    registers: [this.registry],
    collect: (): void => this.decisionCounts.flush(),
  });
  // Counted in plain numbers per decision, handed to prom-client at each scrape.
  private readonly decisionCounts = new PendingCounts((domain, descriptor, outcome) =>
    this.decisions.labels(domain, descriptor, outcome),
  );
  private readonly nearLimit = new Counter({
    name: 'floodgate_ratelimit_service_near_limit_total',
    help: "Admitted descriptors that left less than a fifth of their limit (envoyproxy/ratelimit's near_limit at its default ratio 0.8).",
    labelNames: ['domain', 'descriptor'],
    registers: [this.registry],
    collect: (): void => this.nearCounts.flush(),
  });
  private readonly nearCounts = new PendingCounts((domain, descriptor) => this.nearLimit.labels(domain, descriptor));
  private readonly requests = new Counter({
    name: 'floodgate_ratelimit_service_requests_total',
    help: 'Requests decided, by answer (ok, over_limit, unavailable: the store failed).',
    labelNames: ['answer'],
    registers: [this.registry],
    collect: (): void => this.requestCounts.flush(),
  });
  private readonly requestCounts = new PendingCounts((answer) => this.requests.labels(answer));
  private readonly configLoads = new Counter({
    name: 'floodgate_ratelimit_service_config_loads_total',
    help: 'Config loads and reloads, by result (success, error: refused and the previous config kept).',
    labelNames: ['result'],
    registers: [this.registry],
  });
  private readonly storeUp = new Gauge({
    name: 'floodgate_ratelimit_service_store_up',
    help: '1 while the store answers (its circuit is closed), 0 while it is away.',
    registers: [this.registry],
  });

  constructor() {
    collectDefaultMetrics({ register: this.registry });
    this.storeUp.set(1);
  }

  /** outcome counts one decided descriptor. */
  outcome(o: DescriptorOutcome): void {
    const descriptor = this.labels.labelOf(o);
    this.decisionCounts.children.of(o.domain, descriptor, outcomeLabel(o)).pending++;
    if (o.nearLimit && !o.peek) this.nearCounts.children.of(o.domain, descriptor, '').pending++;
  }

  /** request counts one decided request by its answer. */
  request(answer: 'OK' | 'OVER_LIMIT' | 'unavailable'): void {
    const label = answer === 'OK' ? 'ok' : answer === 'OVER_LIMIT' ? 'over_limit' : 'unavailable';
    this.requestCounts.children.of(label, '', '').pending++;
  }

  /** configLoad counts one load or reload of the config. */
  configLoad(ok: boolean): void {
    this.configLoads.labels(ok ? 'success' : 'error').inc();
  }

  /** store sets whether the store answers. */
  store(up: boolean): void {
    this.storeUp.set(up ? 1 : 0);
  }
}
