/**
 * The gateway process: the traffic listener, the admin listener, the store, and the config they
 * run, reloaded in place (on SIGHUP, on file change, or by the admin API) and drained on shutdown.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { combineObservers } from 'floodgate';
import { ClientIpResolver } from 'floodgate/http';
import type { Logger } from 'pino';
import { loadConfig } from '../config/load.js';
import { UpstreamLog } from '../ops/upstream-log.js';
import { KeyTableWatch } from '../ops/key-table-watch.js';
import { ConfigError, formatProblem, type ConfigProblem } from '../config/problems.js';
import type { GatewayConfig } from '../config/schema.js';
import type { TlsMaterial } from '../config/tls-files.js';
import { Board } from '../dashboard/board.js';
import { LoopClock } from '../dashboard/loop-clock.js';
import { mountDashboard } from '../dashboard/mount.js';
import { adminHandler, tokenDigest } from './admin.js';
import { TrafficListener } from './listener.js';
import { GatewayMetrics } from '../ops/metrics.js';
import { AccessLog } from '../ops/access-log.js';
import { redactConfig } from '../ops/redact.js';
import { gatewayOnStoreError, openStore, type GatewayStore } from '../store/store.js';
import { StoreState } from '../ratelimit/service/store-health.js';
import { StoreLog } from '../ops/store-log.js';
import { Thinned } from '../ops/thinned.js';
import type { DomainSpec } from '../ratelimit/service/config.js';
import type { DecisionReporter } from '../outcomes.js';
import type { GuardEvents } from '../gateway/guards.js';
import type { ShedReporter } from '../gateway/protect.js';
import type { RateLimitServiceHost } from '../gateway/ratelimit-host.js';
import { Upstreams } from '../gateway/proxy.js';
import { RouteTable } from '../gateway/routes.js';
import { keyHashingOf, valueHasher, type KeyHashing } from '../gateway/key-hash.js';
import { requestListener, serveUpgrade, trustedPeers, type TrafficState } from '../gateway/traffic.js';
import { shareOverload, type PrimaryLink, type ReloadResult, type WorkerRole } from './workers.js';

export type { ReloadResult } from './workers.js';

/** GatewayOptions configures {@link Gateway.start}. */
export interface GatewayOptions {
  /** The config file. */
  readonly file: string;
  readonly log: Logger;
  readonly env?: NodeJS.ProcessEnv;
  /** Overrides the config's `listen.port` (0: any free port). */
  readonly port?: number;
  /** Overrides the config's `admin.port` (0: any free port). */
  readonly adminPort?: number;
  /** Longest wait for in-flight requests on shutdown, in ms (default 10,000). */
  readonly drainTimeoutMs?: number;
  /** Overrides the config's `shutdown.drainMs`: how long the listener stays open once unready, in ms. */
  readonly drainMs?: number;
  /**
   * Set when this gateway is one of the workers of `floodgate serve --workers`: the memory store is
   * the primary's (through `floodgate/cluster`), concurrency limits are divided among the workers,
   * the admin port is the primary's (this worker's own is private), and reloads reach every worker.
   */
  readonly worker?: { readonly role: WorkerRole; readonly link: PrimaryLink };
}

/**
 * Gateway is one running `floodgate serve`: it returns from {@link Gateway.start} listening, and
 * is ready once the store has answered a ping.
 *
 * @example
 * const gateway = await Gateway.start({ file: 'floodgate.yaml', log: pino() });
 * process.once('SIGTERM', () => void gateway.shutdown());
 */
export class Gateway implements TrafficState {
  readonly upstreams: Upstreams;
  readonly resolver: ClientIpResolver;
  readonly onStoreError: 'fail-open' | 'fail-closed';
  readonly isTrustedPeer: (peer: string) => boolean;
  table: RouteTable;
  /** Where decisions go: the metrics, and the dashboard's board once the dashboard is mounted. */
  reporter: DecisionReporter;
  private config: GatewayConfig;
  private loadedAt = new Date();
  private ready = false;
  /** Whether every circuit of the store is closed (the rate limit service's health may follow it). */
  private storeUp = true;
  private draining = false;
  private stopping: Promise<void> | undefined;
  private inFlight = 0;
  private drained: (() => void) | undefined;
  /** Ends the waits of a shutdown under way at once (see {@link Gateway.cutShutdown}). */
  private readonly cut: { promise: Promise<void>; resolve: () => void } = cutter();
  private readonly traffic: TrafficListener;
  /** The listener's certificate in service (undefined without TLS): a reload swaps in a new one. */
  private tls: TlsMaterial | undefined;
  /** Upgraded sockets (both ends of each tunnel) still open. */
  private readonly tunnels = new Set<Duplex>();
  private admin: Server | undefined;
  /** The rate limit service, when the config has a rateLimitService section. */
  private service: RateLimitServiceHost | undefined;
  /** The descriptor files the rate limit service was loaded from (absolute paths). */
  descriptorFiles: readonly string[];
  /** Where circuit changes go: the metrics and the board. One sink for the process, as a kept breaker keeps the sink it was built with. */
  private readonly guardEvents: GuardEvents;
  /** The access log, when the config turns it on (fixed at start). */
  readonly accessLog: AccessLog | undefined;
  readonly upstreamLog: UpstreamLog;
  readonly sheds: ShedReporter;
  /** The memory store's key table at its bound, polled every 5 s (and at each scrape); none on Redis. */
  private readonly keyTableTimer: NodeJS.Timeout | undefined;
  /** How identity values become store keys: fixed at start (a change renames every key, so it waits for a restart). */
  private readonly keyHashing: KeyHashing;

  readonly log: Logger;

  private constructor(
    private readonly options: GatewayOptions,
    config: GatewayConfig,
    private readonly domains: readonly DomainSpec[],
    descriptorFiles: readonly string[],
    private readonly store: GatewayStore,
    readonly metrics: GatewayMetrics,
    /** The dashboard's memory, fed by decisions when the dashboard is on and by the store's observer. */
    readonly board: Board,
    tls: TlsMaterial | undefined,
  ) {
    this.reporter = metrics;
    this.log = options.log;
    metrics.inFlightCount = () => this.inFlight;
    const log = this.log;
    this.config = config;
    this.descriptorFiles = descriptorFiles;
    this.upstreams = new Upstreams(config.limits);
    this.resolver = new ClientIpResolver(
      { trustProxy: config.trustProxy, forwardedHeader: config.forwardedHeader },
      { warn: (message: string) => log.warn(message) },
    );
    this.isTrustedPeer = trustedPeers(config.trustProxy);
    this.onStoreError = gatewayOnStoreError(config.store);
    metrics.overload.guards = () => this.table.guards.all;
    this.sheds = {
      shed(scope, tier, reason) {
        metrics.overload.shed(scope, tier, reason);
        board.shed(scope, tier, reason);
      },
    };
    this.guardEvents = {
      circuitTransition(scope, to, reason) {
        metrics.overload.circuitTransition(scope, to);
        board.overload.circuitTransition(scope, to, reason);
      },
    };
    this.keyHashing = keyHashingOf(config.keys, this.env);
    this.accessLog = AccessLog.open(config.accessLog);
    this.upstreamLog = new UpstreamLog({ log, now: () => performance.now() });
    const overflow = store.overflow;
    if (overflow !== undefined) {
      const watch = new KeyTableWatch({
        read: overflow.counts,
        log,
        registry: metrics.registry,
        maxKeys: overflow.maxKeys,
        now: () => performance.now(),
      });
      this.keyTableTimer = setInterval(() => watch.poll(), 5_000);
      this.keyTableTimer.unref();
    }
    this.table = RouteTable.build(config, {
      store: store.store,
      env: this.env,
      keyHashing: this.keyHashing,
      events: this.guardEvents,
      ...(store.fleetSmooth === undefined ? {} : { fleetSmooth: store.fleetSmooth }),
      ...(store.leased === undefined ? {} : { leased: store.leased }),
    });
    this.tls = tls;
    this.traffic = new TrafficListener({ listen: config.listen, limits: config.limits, tls });
    const onRequest = requestListener(this);
    this.traffic.on('request', onRequest);
    // With this listener Node leaves `Expect: 100-continue` to the gateway: the 100 goes out only once the request is admitted.
    this.traffic.on('checkContinue', onRequest);
    this.traffic.on('upgrade', (req, socket, head) => {
      serveUpgrade(this, req, socket, head).catch(() => socket.destroy());
    });
    const parserRefusals = new Thinned(10_000, () => performance.now());
    this.traffic.on('clientError', (err: NodeJS.ErrnoException, socket) => {
      if (!socket.writable) return socket.destroy();
      const status = err.code === 'HPE_HEADER_OVERFLOW' ? 431 : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400;
      // Before any route: counted under the route "(parser)", and logged at most once every 10 s.
      this.metrics.response('(parser)', status, undefined);
      const alsoSince = parserRefusals.hit();
      if (alsoSince !== undefined)
        this.log.warn(
          { status, code: err.code, peer: (socket as { remoteAddress?: string }).remoteAddress, alsoSince },
          'client error: the HTTP parser refused a request',
        );
      socket.end(
        `HTTP/1.1 ${status} ${status === 431 ? 'Request Header Fields Too Large' : status === 408 ? 'Request Timeout' : 'Bad Request'}\r\nconnection: close\r\ncontent-length: 0\r\n\r\n`,
      );
    });
  }

  /** start loads the config, opens the store, listens on both ports and resolves once listening. */
  static async start(options: GatewayOptions): Promise<Gateway> {
    const env = options.env ?? process.env;
    const loaded = await loadConfig(options.file, env);
    const { domains, descriptorFiles, tls } = loaded;
    const config = shareOverload(loaded.config, options.worker?.role.count ?? 1);
    // With workers, the primary logs the config's warnings once for the host.
    if (options.worker === undefined) logWarnings(options.log, loaded.warnings);
    const metrics = new GatewayMetrics();
    const board = new Board({ clock: new LoopClock() });
    const made: { gateway?: Gateway } = {};
    const storeLog = new StoreLog({
      log: options.log,
      onError: onErrorName(config.store),
      now: () => performance.now(),
    });
    const storeState = new StoreState((up) => {
      storeLog.changed(up);
      made.gateway?.storeChanged(up);
    });
    const store = await openStore(config.store, {
      env,
      shared: options.worker !== undefined,
      observer: combineObservers(metrics.observer, board.observer, storeState.observer),
      onBackendError: (err) => storeLog.connectionError(err),
    });
    const gateway = new Gateway(options, config, domains, descriptorFiles, store, metrics, board, tls);
    made.gateway = gateway;
    try {
      await gateway.listen();
    } catch (err) {
      await gateway.shutdown();
      throw err;
    }
    void gateway.becomeReady();
    return gateway;
  }

  private get env(): NodeJS.ProcessEnv {
    return this.options.env ?? process.env;
  }

  /** port is the traffic listener's port. */
  get port(): number {
    return this.traffic.port;
  }

  /** tlsFiles are the listener's certificate, key and CA files (absolute paths; none without TLS), watched like the config. */
  get tlsFiles(): readonly string[] {
    return this.tls?.files ?? [];
  }

  /** adminPort is the admin listener's port, or undefined when there is none. */
  get adminPort(): number | undefined {
    return this.admin === undefined ? undefined : (this.admin.address() as AddressInfo).port;
  }

  /** rateLimitService is the running rate limit service's ports and domains, or undefined without one. */
  get rateLimitService(): ReturnType<RateLimitServiceHost['summary']> | undefined {
    return this.service?.summary();
  }

  private async listen(): Promise<void> {
    const c = this.config;
    await this.traffic.listen(this.options.port ?? c.listen.port, c.listen.host);
    if (c.rateLimitService !== undefined) {
      // Loaded only when configured: gRPC alone costs about a quarter of a second of CPU at start.
      const { RateLimitServiceHost } = await import('../gateway/ratelimit-host.js');
      this.service = await RateLimitServiceHost.start({
        section: c.rateLimitService,
        domains: this.domains,
        store: this.store.store,
        redis: this.store.redis,
        metrics: this.metrics,
        log: this.log,
        hideValue: valueHasher(this.keyHashing),
      });
      if (!this.storeUp) this.service.storeChanged(false, this.onStoreError === 'fail-closed');
    }
    let dashboardUrl: string | undefined;
    if (c.admin !== undefined || this.options.adminPort !== undefined) {
      const token = c.admin?.tokenEnv !== undefined ? this.env[c.admin.tokenEnv] : c.admin?.token;
      const digest = token === undefined ? undefined : tokenDigest(token);
      const activeConfig = (): { file: string; loadedAt: string; config: unknown; rateLimitService?: unknown } => ({
        file: this.options.file,
        loadedAt: this.loadedAt.toISOString(),
        config: redactConfig(this.config),
        ...(this.service === undefined
          ? {}
          : { rateLimitService: { ...this.service.summary(), descriptorFiles: this.descriptorFiles } }),
      });
      const dashboard = mountDashboard({
        board: this.board,
        metrics: this.metrics,
        tokenDigest: digest,
        settings: c.admin?.dashboard,
        storeKind: this.store.kind,
        table: () => this.table,
        activeConfig,
        isReady: () => this.serving,
        ports: () => ({ port: this.port, adminPort: this.adminPort }),
        ...(this.store.registry === undefined
          ? this.options.worker === undefined
            ? {}
            : { registry: this.options.worker.link.registry }
          : { registry: this.store.registry }),
      });
      if (dashboard !== undefined) this.reporter = dashboard.reporter;
      this.admin = createServer(
        adminHandler({
          metrics: this.metrics,
          tokenDigest: digest,
          isReady: () => this.serving,
          rule: (route, rule) => this.table.rule(route, rule),
          activeConfig,
          reload: () => this.options.worker?.link.reloadAll('admin API') ?? this.reload('admin API'),
          dashboard: dashboard?.endpoints,
        }),
      );
      // A worker's admin port is its own (exclusive, not shared through the cluster): the primary
      // serves the host's, and sends it what a worker answers.
      if (this.options.worker !== undefined) await listenOn(this.admin, 0, '127.0.0.1', true);
      else await listenOn(this.admin, this.options.adminPort ?? c.admin?.port ?? 9090, c.admin?.host ?? '127.0.0.1');
      if (dashboard !== undefined) dashboardUrl = `http://${c.admin?.host ?? '127.0.0.1'}:${this.adminPort}/dashboard`;
    }
    const service =
      this.service === undefined
        ? {}
        : { grpcPort: this.service.grpcPort, httpPort: this.service.httpPort, domains: this.service.service.domains };
    this.log.info(
      {
        port: this.port,
        protocols: this.traffic.protocols,
        ...(this.tls === undefined ? {} : { certificateValidTo: this.tls.validTo }),
        adminPort: this.adminPort,
        routes: c.routes.map((r) => r.name),
        store: c.store.type,
        ...service,
        ...(dashboardUrl === undefined ? {} : { dashboard: dashboardUrl }),
      },
      this.options.worker === undefined ? 'listening' : 'worker listening',
    );
    this.options.worker?.link.tell({
      kind: 'listening',
      port: this.port,
      ...(this.adminPort === undefined ? {} : { adminPort: this.adminPort }),
    });
  }

  /**
   * serving tells whether `/readyz` answers 200: ready (the store answered a ping, no drain begun),
   * and not refusing every request: under `onError: fail-closed` a store away answers each request
   * 503, so the gateway is unready until it is back, as a Kubernetes readiness probe expects.
   */
  private get serving(): boolean {
    return this.ready && (this.storeUp || this.onStoreError !== 'fail-closed');
  }

  /** Ready once the store answers a ping; retried every 200 ms until then. */
  private async becomeReady(): Promise<void> {
    while (!this.draining) {
      try {
        await this.store.ping(1_000);
        this.ready = true;
        this.metrics.setReady(true);
        this.log.info(this.options.worker === undefined ? 'ready' : 'worker ready');
        this.options.worker?.link.tell({ kind: 'ready' });
        const risks = await this.store.memoryRisks();
        for (const risk of risks) this.log.warn({ risk }, 'store memory: a throttled key could be evicted');
        if (this.store.kind === 'redis') this.log.info({ risks: risks.length }, 'store memory checked');
        return;
      } catch (err) {
        this.log.warn({ error: (err as Error).message }, 'store not answering yet; not ready');
        await new Promise((r) => setTimeout(r, 200));
      }
    }
  }

  /**
   * reload reads the config file again and applies its routes and rules, keeping the limiter (and
   * so every counter) of each rule whose policy did not change. An invalid file changes nothing.
   * Listener, admin, store and limits settings need a restart; a change to them is logged and kept aside.
   */
  async reload(why: string): Promise<ReloadResult> {
    const started = performance.now();
    let config: GatewayConfig;
    let loaded: Awaited<ReturnType<typeof loadConfig>>;
    try {
      loaded = await loadConfig(this.options.file, this.env);
      config = shareOverload(loaded.config, this.options.worker?.role.count ?? 1);
    } catch (err) {
      const problems = err instanceof ConfigError ? err.problems.map(formatProblem) : [(err as Error).message];
      this.metrics.reload(false);
      this.log.error({ why, problems }, 'config reload rejected; the running config stays in force');
      return { applied: false, problems };
    }
    const parts = ['listen', 'admin', 'store', 'limits', 'trustProxy', 'forwardedHeader', 'keys', 'accessLog'] as const;
    for (const part of parts) {
      if (JSON.stringify(restartPart(config, part)) !== JSON.stringify(restartPart(this.config, part)))
        this.log.warn({ part }, `the "${part}" settings changed: they apply at the next restart`);
    }
    logWarnings(this.log, loaded.warnings);
    this.reloadTls(loaded.tls);
    const rateLimitService = this.reloadService(config, loaded.domains);
    if (rateLimitService === this.config.rateLimitService)
      loaded = { ...loaded, descriptorFiles: this.descriptorFiles };
    const previous = this.table;
    const table = RouteTable.build(
      { ...config, store: this.config.store },
      {
        store: this.store.store,
        env: this.env,
        keyHashing: this.keyHashing,
        previous,
        events: this.guardEvents,
        ...(this.store.fleetSmooth === undefined ? {} : { fleetSmooth: this.store.fleetSmooth }),
        ...(this.store.leased === undefined ? {} : { leased: this.store.leased }),
      },
    );
    const kept = [...table.limiters.values()].filter((l) => [...previous.limiters.values()].includes(l)).length;
    const keptGuards = [...table.guards.kept.values()].filter((g) =>
      [...previous.guards.kept.values()].includes(g),
    ).length;
    this.table = table;
    this.config = {
      ...config,
      listen: { ...this.config.listen, tls: this.tls === undefined ? undefined : config.listen.tls },
      admin: this.config.admin,
      store: this.config.store,
      limits: this.config.limits,
      trustProxy: this.config.trustProxy,
      forwardedHeader: this.config.forwardedHeader,
      keys: this.config.keys,
      accessLog: this.config.accessLog,
      rateLimitService,
    };
    this.descriptorFiles = loaded.descriptorFiles;
    this.loadedAt = new Date();
    this.upstreams.retain(new Set(table.routes.map((r) => r.upstream.origin)));
    this.metrics.reload(true);
    this.log.info(
      {
        why,
        routes: table.routes.length,
        domains: this.service?.service.domains,
        keptLimiters: kept,
        newLimiters: table.limiters.size - kept,
        keptGuards,
        newGuards: table.guards.kept.size - keptGuards,
        tookMs: Math.round(performance.now() - started),
      },
      'config reloaded',
    );
    return { applied: true, problems: [] };
  }

  /**
   * reloadService gives the running rate limit service its new domains and returns the section now
   * in force; adding or removing the section needs a restart, so that is logged and the old one kept.
   */
  private reloadService(config: GatewayConfig, domains: readonly DomainSpec[]): GatewayConfig['rateLimitService'] {
    const next = config.rateLimitService;
    if (this.service === undefined || next === undefined) {
      if ((this.service === undefined) !== (next === undefined))
        this.log.warn(
          { part: 'rateLimitService' },
          `the rate limit service was ${next === undefined ? 'removed' : 'added'}: that applies at the next restart`,
        );
      return this.config.rateLimitService;
    }
    this.service.reload(next, domains);
    return { ...next, grpc: this.config.rateLimitService?.grpc, http: this.config.rateLimitService?.http };
  }

  /**
   * reloadTls puts the reloaded certificate in service for new connections (those open keep
   * theirs), when the listener has TLS; turning TLS on or off, or client certificates, needs a restart.
   */
  private reloadTls(next: TlsMaterial | undefined): void {
    const now = this.tls;
    if (now === undefined || next === undefined || (now.ca === undefined) !== (next.ca === undefined)) {
      if (now !== next)
        this.log.warn(
          { part: 'listen.tls' },
          'TLS was turned on or off, or client certificates: that applies at the next restart',
        );
      return;
    }
    if (
      now.cert.equals(next.cert) &&
      now.key.equals(next.key) &&
      now.ca?.equals(next.ca!) !== false &&
      now.minVersion === next.minVersion
    )
      return;
    this.traffic.setTls(next);
    this.tls = next;
    this.log.info({ files: next.files, certificateValidTo: next.validTo }, 'TLS certificate reloaded');
  }

  /** storeChanged hears the store go away or come back: the rate limit service's health follows it as configured. */
  private storeChanged(up: boolean): void {
    this.storeUp = up;
    if (this.ready) this.metrics.setReady(this.serving);
    this.service?.storeChanged(up, this.onStoreError === 'fail-closed');
  }

  /** track keeps an upgraded socket until it closes. */
  track(socket: Duplex): void {
    this.tunnels.add(socket);
    socket.once('close', () => this.tunnels.delete(socket));
  }

  /** requestStarted counts a request in flight. */
  requestStarted(): void {
    this.inFlight++;
  }

  /** requestEnded counts a request out, and ends a drain that waited for the last. */
  requestEnded(): void {
    this.inFlight--;
    if (this.inFlight === 0 && this.drained !== undefined) this.drained();
  }

  /**
   * shutdown stops being ready at once, keeps serving for the drain period (`shutdown.drainMs`) so
   * that load balancers see `/readyz` fail before connections are refused, then stops accepting
   * connections, waits for requests in flight (up to `drainTimeoutMs`), and closes every
   * connection, pool and store connection. {@link Gateway.cutShutdown} ends both waits early.
   * `drainMs`, when given, is the drain period of this shutdown instead of the option's or the
   * config's (0: none; what Ctrl-C asks for). A shutdown already under way keeps its own.
   */
  shutdown(options: { readonly drainMs?: number } = {}): Promise<void> {
    this.stopping ??= this.drainAndClose(options.drainMs ?? this.options.drainMs ?? this.config.shutdown.drainMs);
    return this.stopping;
  }

  /** cutShutdown ends the waits of a shutdown under way (what is left of the drain period, and the wait for requests in flight); before one, it does nothing. */
  cutShutdown(): void {
    if (this.stopping === undefined) return;
    this.log.warn({ inFlight: this.inFlight }, 'shutting down now: the drain was cut short');
    this.cut.resolve();
  }

  private async drainAndClose(drainMs: number): Promise<void> {
    this.draining = true;
    this.ready = false;
    this.metrics.setReady(false);
    this.options.worker?.link.tell({ kind: 'unready' });
    if (drainMs > 0) {
      this.log.info({ drainMs }, 'shutting down: unready, still serving until the drain period ends');
      await waitOrCut(drainMs, this.cut.promise);
    }
    this.log.info({ inFlight: this.inFlight }, 'shutting down: draining requests in flight');
    const closed = this.traffic.close();
    const serviceClosed = this.service?.close() ?? Promise.resolve();
    this.traffic.closeIdleConnections();
    const drained = this.inFlight === 0 ? Promise.resolve() : new Promise<void>((resolve) => (this.drained = resolve));
    const limit = this.options.drainTimeoutMs ?? 10_000;
    const late = !(await waitOrCut(limit, Promise.race([drained, this.cut.promise])));
    if (late) this.log.warn({ inFlight: this.inFlight }, 'drain timed out; closing the remaining connections');
    this.traffic.closeAllConnections();
    for (const socket of this.tunnels) socket.destroy();
    await closed;
    await serviceClosed;
    await this.upstreams.close();
    await this.table.closeLeases();
    await this.store.close();
    await this.accessLog?.close();
    clearInterval(this.keyTableTimer);
    this.board.close();
    if (this.admin !== undefined) {
      this.admin.closeAllConnections();
      await new Promise<void>((resolve) => this.admin!.close(() => resolve()));
    }
    this.log.info('stopped');
  }
}

/** A promise with its resolve function (Promise.withResolvers, which Node 20 lacks). */
function cutter(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

/** Waits `ms`, or less when `early` settles first; resolves true when `early` did. */
async function waitOrCut(ms: number, early: Promise<void>): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const elapsed = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  const settled = await Promise.race([early.then(() => true), elapsed]);
  clearTimeout(timer);
  return settled;
}

function listenOn(server: Server, port: number, host: string, exclusive = false): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen({ port, host, exclusive }, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

/** The name of what decides while the store is away, for the outage's log line. */
function onErrorName(config: GatewayConfig['store']): string {
  if (config.type === 'memory') return 'none (memory store)';
  const onError = config.onError ?? 'local';
  return typeof onError === 'string' ? onError : 'local';
}

/** A config part as compared for "applies at the next restart": the listener's TLS files are reloaded in place, so they are left out. */
function restartPart(config: GatewayConfig, part: keyof GatewayConfig): unknown {
  return part === 'listen' ? { ...config.listen, tls: config.listen.tls !== undefined } : config[part];
}

/** logWarnings logs each config warning (see config/warnings.ts) as one warn line with its place and fix. */
export function logWarnings(log: Logger, warnings: readonly ConfigProblem[]): void {
  for (const w of warnings)
    log.warn({ file: w.file, line: w.line, path: w.path, fix: w.hint }, `config warning: ${w.message}`);
}
