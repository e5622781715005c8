/**
 * The decision service inside `floodgate serve`: Envoy's gRPC `RateLimitService` and the JSON API
 * on the gateway's own store, their decisions counted in the gateway's metrics, reloaded with the
 * config and closed (calls in flight answered) on shutdown.
 */
import type { Store } from 'floodgate';
import type { Logger } from 'pino';
import type { RateLimitServiceConfig } from '../config/schema.js';
import type { DomainSpec } from '../ratelimit/service/config.js';
import { startRateLimitServers, type RateLimitServers } from '../ratelimit/service/servers.js';
import { createRateLimitService, type RateLimitService } from '../ratelimit/service/service.js';
import type { GatewayMetrics } from '../ops/metrics.js';
import { DRAFT_HEADERS, namedResponseHeaders, type ResponseHeaders } from '../ratelimit/service/headers.js';
import { DescriptorLabels, outcomeLabel } from '../ratelimit/service/metric-labels.js';
import { servingWhen } from '../ratelimit/service/store-health.js';
import { QuotaService } from '../ratelimit/quota/service.js';
import { RedisQuotaLedger, type QuotaSubscriber } from '../ratelimit/quota/redis-ledger.js';
import { registerQuotaMetrics } from '../ratelimit/quota/metrics.js';
import type { RedisAdapter } from 'floodgate/redis';

/** RateLimitServiceHostOptions configures {@link RateLimitServiceHost.start}. */
export interface RateLimitServiceHostOptions {
  readonly section: RateLimitServiceConfig;
  readonly domains: readonly DomainSpec[];
  /** The gateway's store: the service's counters live beside the routes'. */
  readonly store: Store;
  /** The gateway's Redis, when its store is there: the RLQS ledger is kept beside the counters, shared by every gateway on it. */
  readonly redis?:
    | { readonly adapter: RedisAdapter; readonly prefix: string | undefined; readonly subscriber?: QuotaSubscriber }
    | undefined;
  readonly metrics: GatewayMetrics;
  readonly log: Logger;
  /** What descriptor values become before they name a counter or a label (the `keys` section's hash); raw when undefined. */
  readonly hideValue?: ((value: string) => string) | undefined;
}

/**
 * RateLimitServiceHost is a running decision service with its listeners. {@link RateLimitServiceHost.start}
 * resolves once both listeners it was asked for are up.
 *
 * @example
 * const host = await RateLimitServiceHost.start({ section, domains, store, metrics, log });
 * await host.close();
 */
export class RateLimitServiceHost {
  private constructor(
    readonly service: RateLimitService,
    private readonly servers: RateLimitServers,
    private section: RateLimitServiceConfig,
    private readonly log: Logger,
    /** Envoy's Rate Limit Quota Service on the gRPC listener, for the domains' `quota:` sections. */
    readonly quota: QuotaService,
  ) {}

  /** start creates the service on `options.store` and starts its listeners. */
  static async start(options: RateLimitServiceHostOptions): Promise<RateLimitServiceHost> {
    const { section, metrics } = options;
    const labels = new DescriptorLabels();
    const service = createRateLimitService({
      domains: options.domains,
      store: options.store,
      onOutcome: (o) => metrics.serviceDecision(o.domain, labels.labelOf(o), outcomeLabel(o)),
      shadowMode: section.shadowMode === true,
      responseHeaders: headersOfSection(section),
      ...(options.hideValue === undefined ? {} : { hideValue: options.hideValue }),
    });
    const redis = options.redis;
    const quota = new QuotaService({
      domains: options.domains,
      hideValue: options.hideValue,
      ...(redis === undefined
        ? {}
        : {
            ledger: new RedisQuotaLedger({
              adapter: redis.adapter,
              prefix: redis.prefix,
              ...(redis.subscriber === undefined ? {} : { subscriber: redis.subscriber }),
            }),
          }),
    });
    registerQuotaMetrics(metrics.registry, quota);
    const grpcHost = section.grpc?.host;
    const httpHost = section.http?.host;
    // One host serves both listeners; start them apart when they differ.
    const servers =
      grpcHost !== undefined && httpHost !== undefined && grpcHost !== httpHost
        ? await startApart(service, section, quota)
        : await startRateLimitServers({
            service,
            grpcPort: section.grpc?.port,
            httpPort: section.http?.port,
            host: grpcHost ?? httpHost ?? '127.0.0.1',
            tracing: section.tracing === true,
            quota,
          });
    return new RateLimitServiceHost(service, servers, section, options.log, quota);
  }

  /** grpcPort is the gRPC listener's port, or undefined when there is none. */
  get grpcPort(): number | undefined {
    return this.servers.grpcPort;
  }

  /** httpPort is the JSON API's port, or undefined when there is none. */
  get httpPort(): number | undefined {
    return this.servers.httpPort;
  }

  /** summary returns what the admin API's config dump shows of the running service. */
  summary(): { grpcPort: number | null; httpPort: number | null; domains: string[] } {
    return { grpcPort: this.grpcPort ?? null, httpPort: this.httpPort ?? null, domains: this.service.domains };
  }

  /** reload serves `domains` from now on (counters of unchanged limits carry on); a listener change is logged and applies at the next restart. */
  reload(section: RateLimitServiceConfig, domains: readonly DomainSpec[]): void {
    for (const part of ['grpc', 'http', 'responseHeaders', 'shadowMode', 'tracing'] as const) {
      if (JSON.stringify(section[part]) !== JSON.stringify(this.section[part]))
        this.log.warn(
          { part: `rateLimitService.${part}` },
          `the "rateLimitService.${part}" settings changed: they apply at the next restart`,
        );
    }
    this.service.reload(domains);
    this.quota.reload(domains);
    this.section = {
      ...section,
      grpc: this.section.grpc,
      http: this.section.http,
      responseHeaders: this.section.responseHeaders,
      shadowMode: this.section.shadowMode,
      tracing: this.section.tracing,
    };
  }

  /**
   * storeChanged tells the service its store went away (`up` false) or came back: its health then
   * follows as `healthFollowsStore` says (`decisionsFail`: the store's failure policy refuses every
   * decision while it is away).
   */
  storeChanged(up: boolean, decisionsFail: boolean): void {
    this.service.health.set(servingWhen(up, this.section.healthFollowsStore ?? 'auto', decisionsFail));
  }

  /** close stops both listeners; calls in flight are answered first. */
  close(): Promise<void> {
    this.quota.close();
    return this.servers.close();
  }
}

/** headersOfSection returns the response headers `rateLimitService.responseHeaders` asks for (the draft's by default). */
function headersOfSection(section: RateLimitServiceConfig): ResponseHeaders {
  const given = section.responseHeaders;
  if (given === undefined) return DRAFT_HEADERS;
  if (typeof given === 'string') return namedResponseHeaders(given) ?? DRAFT_HEADERS;
  return { mode: 'limit-remaining-reset', ...given };
}

async function startApart(
  service: RateLimitService,
  section: RateLimitServiceConfig,
  quota: QuotaService,
): Promise<RateLimitServers> {
  const tracing = section.tracing === true;
  const grpc = await startRateLimitServers({
    service,
    grpcPort: section.grpc!.port,
    host: section.grpc!.host,
    tracing,
    quota,
  });
  let http: RateLimitServers;
  try {
    http = await startRateLimitServers({ service, httpPort: section.http!.port, host: section.http!.host, tracing });
  } catch (err) {
    await grpc.close();
    throw err;
  }
  return {
    grpcPort: grpc.grpcPort,
    httpPort: http.httpPort,
    close: async () => void (await Promise.all([grpc.close(), http.close()])),
  };
}
