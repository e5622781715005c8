/**
 * The quota service's Prometheus metrics, on the registry of the process that serves it
 * (`floodgate ratelimit --metrics-port`, or a gateway's): streams, buckets and waiting actions
 * read from the service at each scrape, and its counts (reports, actions sent, ledger failures,
 * streams ended with an error) handed over at each scrape, so a report costs no metric call.
 */
import { Counter, Gauge, type Registry } from 'prom-client';

/** QuotaCounts are the service's running totals since it started; {@link registerQuotaMetrics} reads them. */
export interface QuotaCounts {
  /** Usage reports received. */
  reports: number;
  /** Bucket actions sent in answer to a report (assignments, blanket rules, abandons). */
  answered: number;
  /** Assignments pushed without a report: a redistribution after a join or leave. */
  pushed: number;
  /** Reports that said a bucket allowed more than its assignments could have allowed (see `allowedOf` in `fair-share.ts`). */
  overReports: number;
  /** Times the shared ledger was found to have lost its records (a new epoch where this replica knew another). */
  ledgerLosses: number;
  /** Ledger calls that failed, by call. */
  readonly ledgerErrors: { grant: number; regrant: number; release: number };
  /** Streams the service ended with an error, by the error's code. */
  readonly streamErrors: { INVALID_REPORT: number; TOO_MANY_BUCKETS: number; INTERNAL: number };
}

/** newQuotaCounts returns counts at zero. */
export function newQuotaCounts(): QuotaCounts {
  return {
    reports: 0,
    answered: 0,
    pushed: 0,
    overReports: 0,
    ledgerLosses: 0,
    ledgerErrors: { grant: 0, regrant: 0, release: 0 },
    streamErrors: { INVALID_REPORT: 0, TOO_MANY_BUCKETS: 0, INTERNAL: 0 },
  };
}

/** TotalCounter describes a counter fed from running totals, one per value of its label (`label` undefined: one total, no label). */
interface TotalCounter {
  readonly name: string;
  readonly help: string;
  readonly label?: string;
  readonly totals: () => Readonly<Record<string, number>>;
}

/** addTotalCounter registers `spec` on `registry`: each scrape adds what each total gained since the last. */
function addTotalCounter(registry: Registry, spec: TotalCounter): void {
  const seen = new Map<string, number>();
  const counter: Counter<string> = new Counter({
    name: spec.name,
    help: spec.help,
    labelNames: spec.label === undefined ? [] : [spec.label],
    registers: [registry],
    collect: (): void => {
      for (const [value, total] of Object.entries(spec.totals())) {
        const gained = total - (seen.get(value) ?? 0);
        seen.set(value, total);
        if (spec.label === undefined) counter.inc(gained);
        else counter.labels(value).inc(gained);
      }
    },
  });
}

/** QuotaStatsSource is what the metrics read of the quota service: its running totals and, at each scrape, its open state. */
export interface QuotaStatsSource {
  readonly counts: QuotaCounts;
  /** The open streams, the buckets they report (once per stream) and the actions waiting for their client. */
  stats(): { streams: number; buckets: number; pending: number };
}

/**
 * registerQuotaMetrics adds the metrics of `quota` to `registry`:
 * - `floodgate_rlqs_streams`, `floodgate_rlqs_buckets`, `floodgate_rlqs_pending_actions` (gauges);
 * - `floodgate_rlqs_reports_total`;
 * - `floodgate_rlqs_actions_total{reason="answer"|"push"}`;
 * - `floodgate_rlqs_over_reports_total`, `floodgate_rlqs_ledger_losses_total`;
 * - `floodgate_rlqs_ledger_errors_total{kind="grant"|"regrant"|"release"}`;
 * - `floodgate_rlqs_stream_errors_total{kind="INVALID_REPORT"|"TOO_MANY_BUCKETS"|"INTERNAL"}`.
 *
 * @example
 * const metrics = new RateLimitMetrics();
 * registerQuotaMetrics(metrics.registry, quota);
 */
export function registerQuotaMetrics(registry: Registry, quota: QuotaStatsSource): void {
  const gauge = (name: string, help: string, read: () => number): void => {
    const g: Gauge = new Gauge({ name, help, registers: [registry], collect: (): void => g.set(read()) });
  };
  gauge('floodgate_rlqs_streams', 'RLQS streams open.', () => quota.stats().streams);
  gauge(
    'floodgate_rlqs_buckets',
    'Buckets the open RLQS streams report (a bucket counts once per stream reporting it).',
    () => quota.stats().buckets,
  );
  gauge(
    'floodgate_rlqs_pending_actions',
    'Bucket actions waiting for their client to read (at most one per bucket of a stream).',
    () => quota.stats().pending,
  );
  const counts = quota.counts;
  addTotalCounter(registry, {
    name: 'floodgate_rlqs_reports_total',
    help: 'RLQS usage reports received.',
    totals: () => ({ all: counts.reports }),
  });
  addTotalCounter(registry, {
    name: 'floodgate_rlqs_actions_total',
    help: 'Bucket actions sent (assignments, blanket rules, abandons), by reason: answer (to a report) or push (a redistribution after a join or leave).',
    label: 'reason',
    totals: () => ({ answer: counts.answered, push: counts.pushed }),
  });
  addTotalCounter(registry, {
    name: 'floodgate_rlqs_over_reports_total',
    help: 'RLQS bucket usages that reported more requests allowed than the assignments sent could have allowed (a client that ignores its assignment); the excess is not counted as demand.',
    totals: () => ({ all: counts.overReports }),
  });
  addTotalCounter(registry, {
    name: 'floodgate_rlqs_ledger_losses_total',
    help: 'Times the shared quota ledger (Redis) was found to have lost its records; grants are then held back for one assignment TTL.',
    totals: () => ({ all: counts.ledgerLosses }),
  });
  addTotalCounter(registry, {
    name: 'floodgate_rlqs_ledger_errors_total',
    help: 'Failed calls to the quota ledger (Redis when shared), by kind: grant (a report; its stream ends with INTERNAL), regrant (a redistribution; skipped), release (a departure; its grants expire by their TTL).',
    label: 'kind',
    totals: () => counts.ledgerErrors,
  });
  addTotalCounter(registry, {
    name: 'floodgate_rlqs_stream_errors_total',
    help: 'RLQS streams the service ended with an error, by kind: INVALID_REPORT (INVALID_ARGUMENT), TOO_MANY_BUCKETS (RESOURCE_EXHAUSTED), INTERNAL.',
    label: 'kind',
    totals: () => counts.streamErrors,
  });
}
