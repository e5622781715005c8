/** The rate limit service's decisions (Envoy gRPC and the JSON API), per domain and descriptor, beside the gateway's. */
import { OutcomeSeries } from './rates.js';
import { SERVICE_OUTCOMES } from '../ratelimit/service/outcome.js';

/** The service's outcomes, as its metrics name them (`peek_` before those that only asked). */
/** Every outcome the service reports, and the same for a descriptor that only asked (hits 0). */
const OUTCOMES = [...SERVICE_OUTCOMES, ...SERVICE_OUTCOMES.map((o) => `peek_${o}` as const)] as const;
type Outcome = (typeof OUTCOMES)[number];

/** SERVICE_GROUPS are the service table's columns: which outcomes each one adds up (every outcome is in one). */
export const SERVICE_GROUPS = {
  admitted: ['admitted'],
  limited: ['limited'],
  /** Over the limit and answered OK all the same: a limit in shadow or quota mode. */
  over: ['shadow_limited', 'quota_limited'],
  degraded: ['fail_open', 'fail_closed', 'fallback', 'store_full'],
  asked: SERVICE_OUTCOMES.map((o) => `peek_${o}` as const),
} as const satisfies Record<string, readonly Outcome[]>;
/** ServiceGroup names one column of {@link SERVICE_GROUPS}. */
export type ServiceGroup = keyof typeof SERVICE_GROUPS;

/** Descriptors kept apart; the rest are counted together as `(other)`. */
const MAX_DESCRIPTORS = 256;

/** ServiceDecisionRow is one descriptor's decisions: per second over the window, and totals since the start. */
export interface ServiceDecisionRow {
  readonly domain: string;
  readonly descriptor: string;
  readonly rates: Readonly<Record<ServiceGroup, { readonly perSecond: number; readonly total: number }>>;
}

/**
 * ServiceDecisions returns the rate limit service's decisions per domain and descriptor (its
 * metric key after the domain), as rates over the last seconds and totals. Memory: per
 * descriptor, 60 x 10 counts; at most {@link MAX_DESCRIPTORS} descriptors, the rest together.
 *
 * @example
 * const service = new ServiceDecisions();
 * service.record('api', 'tenant_a', 'limited', clock.now());
 * service.rows(10, clock.now())[0].rates.limited.total; // 1
 */
export class ServiceDecisions {
  private readonly byDescriptor = new Map<
    string,
    { domain: string; descriptor: string; series: OutcomeSeries<Outcome> }
  >();

  /** record counts one descriptor's decision at `atMs`; an outcome the service does not name is not counted. */
  record(domain: string, descriptor: string, outcome: string, atMs: number): void {
    let id = `${domain}\u0000${descriptor}`;
    let entry = this.byDescriptor.get(id);
    if (entry === undefined && this.byDescriptor.size >= MAX_DESCRIPTORS) {
      id = `${domain}\u0000(other)`;
      entry = this.byDescriptor.get(id);
    }
    if (entry === undefined) {
      entry = { domain, descriptor: id.slice(domain.length + 1), series: new OutcomeSeries(OUTCOMES) };
      this.byDescriptor.set(id, entry);
    }
    entry.series.add(outcome as Outcome, atMs);
  }

  /** rows returns every descriptor seen, by domain and descriptor, rates over the `windowSeconds` before `nowMs`. */
  rows(windowSeconds: number, nowMs: number): ServiceDecisionRow[] {
    return [...this.byDescriptor.values()]
      .sort((a, b) => a.domain.localeCompare(b.domain) || a.descriptor.localeCompare(b.descriptor))
      .map(({ domain, descriptor, series }) => {
        const rates = {} as Record<ServiceGroup, { perSecond: number; total: number }>;
        for (const group of Object.keys(SERVICE_GROUPS) as ServiceGroup[]) {
          const outcomes = SERVICE_GROUPS[group];
          rates[group] = {
            perSecond: series.perSecond(outcomes, windowSeconds, nowMs),
            total: outcomes.reduce((n, o) => n + series.total(o), 0),
          };
        }
        return { domain, descriptor, rates };
      });
  }
}
