/**
 * The primary of `floodgate serve` with workers: it forks the workers that serve the one traffic
 * listener (node's cluster module shares it), keeps the memory store's limits for all of them (a
 * `ClusterStoreHost`), serves the admin port for the host (health, readiness of every worker, the
 * host's metrics summed over the workers, the admin API and dashboard through a worker), reloads
 * every worker on SIGHUP or a file change, replaces a worker that dies, and drains them all on
 * SIGTERM.
 */
import cluster, { type Worker } from 'node:cluster';
import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ClusterStoreHost, serveClusterWorkers } from 'floodgate/cluster';
import type { Logger } from 'pino';
import { AggregatorRegistry } from 'prom-client';
import type { LoadedConfig } from '../config/load.js';
import { watchFiles } from './watch-files.js';
import { WORKER_MARK, isWorkerMessage, type FromWorker, type ReloadResult, type ToWorker } from './workers.js';

/** PrimaryOptions configures {@link runPrimary}. */
export interface PrimaryOptions {
  readonly file: string;
  readonly log: Logger;
  readonly loaded: LoadedConfig;
  readonly workers: number;
  /** Overrides the config's `admin.port`. */
  readonly adminPort?: number;
  /** Whether a change to the config (or a file it names) reloads every worker. */
  readonly watch: boolean;
  /** Reloads the config in the primary (for the files to watch); undefined when it is invalid. */
  readonly reread: () => Promise<LoadedConfig | undefined>;
}

/** One worker as the primary follows it. */
interface Member {
  readonly index: number;
  port?: number;
  adminPort?: number;
  ready: boolean;
  /** Why the config was reloaded while this worker was still starting (it could not hear): told once it listens. */
  missedReload?: string;
}

/** runPrimary runs the workers until SIGTERM or SIGINT and resolves to the exit code. */
export async function runPrimary(o: PrimaryOptions): Promise<number> {
  const { log, loaded } = o;
  const config = loaded.config;
  const host =
    config.store.type === 'memory'
      ? new ClusterStoreHost(config.store.maxKeys === undefined ? {} : { maxKeys: config.store.maxKeys })
      : undefined;
  const stopServing = host === undefined ? () => {} : serveClusterWorkers(host, cluster);
  const members = new Map<Worker, Member>();
  const registry = new Map<string, string>();
  const reloads = new Map<number, { left: number; results: ReloadResult[]; done: (r: ReloadResult) => void }>();
  let nextIndex = 1;
  let nextReload = 1;
  let stopping = false;
  // Whether the shutdown skips the drain period (Ctrl-C): a worker still starting is told again.
  let stopNow = false;
  let started = false;
  let restarts = 0;
  let files: readonly string[] = filesOf(loaded);
  // Signals are heard from the start: one that came before a handler would end the primary at once,
  // leaving its workers behind. The first asks for the shutdown; a second cuts the drains short.
  let signalled = 0;
  let stopAsked!: (signal: NodeJS.Signals) => void;
  const stopSignal = new Promise<NodeJS.Signals>((resolve) => (stopAsked = resolve));
  const onSignal = (signal: NodeJS.Signals): void => {
    if (++signalled === 1) return stopAsked(signal);
    for (const w of members.keys()) tell(w, { w: WORKER_MARK, kind: 'cut' });
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  process.on('SIGHUP', () => void (started ? reloadAll('SIGHUP') : undefined));

  const fork = (): void => {
    const index = nextIndex++;
    const worker = cluster.fork({ FLOODGATE_WORKER_INDEX: String(index), FLOODGATE_WORKERS: String(o.workers) });
    // A worker's channel failing (it died as it was written to) is the exit handler's to report.
    worker.on('error', (err: Error) => log.debug({ worker: index, error: err.message }, 'worker channel error'));
    members.set(worker, { index, ready: false });
  };

  const reloadAll = (why: string): Promise<ReloadResult> => {
    // A worker still starting may not listen for messages yet (what it is sent then is lost): it is
    // told once it listens, and the reload waits only for those that can answer.
    const live: Worker[] = [];
    for (const [w, m] of members)
      if (m.port === undefined) m.missedReload = why;
      else if (w.isConnected()) live.push(w);
    if (live.length === 0) return Promise.resolve({ applied: false, problems: ['no worker is running'] });
    const id = nextReload++;
    return new Promise((done) => {
      reloads.set(id, { left: live.length, results: [], done });
      for (const w of live) tell(w, { w: WORKER_MARK, kind: 'reload', id, why });
    }).then(async (result) => {
      const next = await o.reread();
      if (next !== undefined) files = filesOf(next);
      return result as ReloadResult;
    });
  };

  cluster.on('message', (worker, message: unknown) => {
    if (!isWorkerMessage<FromWorker>(message)) return;
    const member = members.get(worker);
    if (member === undefined) return;
    switch (message.kind) {
      case 'listening':
        member.port = message.port;
        if (message.adminPort !== undefined) member.adminPort = message.adminPort;
        // A worker forked just before the shutdown was still loading when it was told, and a message
        // that comes before a process listens for messages is lost: it hears it now that it listens.
        if (stopping) tell(worker, { w: WORKER_MARK, kind: 'shutdown', now: stopNow });
        else if (member.missedReload !== undefined) {
          // Its answer goes to no reload: those it missed answered without it.
          tell(worker, { w: WORKER_MARK, kind: 'reload', id: 0, why: member.missedReload });
          member.missedReload = undefined;
        }
        return;
      case 'ready':
      case 'unready':
        member.ready = message.kind === 'ready';
        if (member.ready && started && !stopping && [...members.values()].every((m) => m.ready))
          log.info({ workers: members.size }, 'ready');
        return;
      case 'reload-all':
        void reloadAll(message.why).then((result) =>
          tell(worker, { w: WORKER_MARK, kind: 'reload-all-done', id: message.id, result }),
        );
        return;
      case 'reloaded': {
        const r = reloads.get(message.id);
        if (r === undefined) return;
        r.results.push(message.result);
        if (--r.left === 0) {
          reloads.delete(message.id);
          r.done({
            applied: r.results.every((x) => x.applied),
            problems: [...new Set(r.results.flatMap((x) => x.problems))],
          });
        }
        return;
      }
      case 'registry':
        tell(worker, {
          w: WORKER_MARK,
          kind: 'registry-done',
          id: message.id,
          value: registryOp(registry, message.op, message.args),
        });
        return;
    }
  });

  const exited = new Promise<void>((allGone) => {
    cluster.on('exit', (worker, code, signal) => {
      const member = members.get(worker);
      members.delete(worker);
      for (const [id, r] of reloads) {
        // A worker that died mid-reload answers for nothing: the reload is what the others said.
        if (--r.left === 0) {
          reloads.delete(id);
          r.done({
            applied: r.results.every((x) => x.applied),
            problems: [...new Set(r.results.flatMap((x) => x.problems))],
          });
        }
      }
      if (stopping) {
        if (members.size === 0) allGone();
        return;
      }
      restarts++;
      log.warn(
        { worker: member?.index, pid: worker.process.pid, code, signal },
        started ? 'worker exited; starting another' : 'worker exited while starting',
      );
      if (started) fork();
      else if (members.size === 0) allGone();
    });
  });

  for (let i = 0; i < o.workers; i++) fork();
  const listening = await allListening(members, exited);
  if (!listening) {
    stopping = true;
    for (const w of members.keys()) w.kill('SIGKILL');
    log.fatal('a worker could not start; not starting');
    return 1;
  }
  started = true;
  const admin = await startAdmin(o, {
    members,
    host,
    restarts: () => restarts,
    reloadAll,
    isReady: () => !stopping && members.size > 0 && [...members.values()].every((m) => m.ready),
  });
  const first = [...members.values()][0]!;
  log.info(
    {
      port: first.port,
      adminPort: admin === undefined ? undefined : (admin.address() as AddressInfo).port,
      workers: o.workers,
      routes: config.routes.map((r) => r.name),
      store: config.store.type,
    },
    'listening',
  );
  if ([...members.values()].every((m) => m.ready)) log.info({ workers: members.size }, 'ready');

  const stopWatching = o.watch
    ? watchFiles(
        () => [o.file, ...files],
        () => void reloadAll('file changed'),
      )
    : () => {};
  // SIGTERM drains each worker (shutdown.drainMs); Ctrl-C (SIGINT) closes at once, as one process does.
  const signal = await stopSignal;
  stopping = true;
  stopNow = signal === 'SIGINT';
  stopWatching();
  log.info({ workers: members.size, signal }, 'shutting down every worker');
  for (const w of members.keys()) tell(w, { w: WORKER_MARK, kind: 'shutdown', now: stopNow });
  if (members.size > 0) await exited;
  stopServing();
  host?.close();
  if (admin !== undefined) {
    admin.closeAllConnections();
    await new Promise<void>((resolve) => admin.close(() => resolve()));
  }
  log.info('stopped');
  return 0;
}

/** tell sends `message` to `worker` unless it has gone (a failed send is the exit handler's to report). */
function tell(worker: Worker, message: ToWorker): void {
  if (worker.isConnected()) worker.send(message, () => {});
}

/** Resolves true once every worker listens, false when one exits first. */
function allListening(members: Map<Worker, Member>, exited: Promise<void>): Promise<boolean> {
  return new Promise((resolve) => {
    const check = (): void => {
      if ([...members.values()].every((m) => m.port !== undefined)) {
        cluster.off('message', check);
        resolve(true);
      }
    };
    cluster.on('message', check);
    cluster.once('exit', () => {
      cluster.off('message', check);
      resolve(false);
    });
    void exited.then(() => resolve(false));
  });
}

function registryOp(
  registry: Map<string, string>,
  op: 'publish' | 'entries' | 'remove',
  args: readonly string[],
): unknown {
  if (op === 'publish') return void registry.set(args[0]!, args[1]!);
  if (op === 'remove') return void args.forEach((id) => registry.delete(id));
  return Object.fromEntries(registry);
}

function filesOf(loaded: LoadedConfig): readonly string[] {
  return [...loaded.descriptorFiles, ...(loaded.tls?.files ?? [])];
}

/** What the admin port needs of the primary. */
interface AdminParts {
  readonly members: Map<Worker, Member>;
  readonly host: ClusterStoreHost | undefined;
  readonly restarts: () => number;
  readonly reloadAll: (why: string) => Promise<ReloadResult>;
  readonly isReady: () => boolean;
}

/**
 * The host's admin port: health and readiness here; `/metrics` summed over every worker (counters
 * and histograms added, gauges added: a limit divided among workers reads as the host's); anything
 * else (the admin API, the dashboard) served by a ready worker, whose reload reaches every worker.
 */
async function startAdmin(o: PrimaryOptions, parts: AdminParts): Promise<Server | undefined> {
  const c = o.loaded.config;
  if (c.admin === undefined && o.adminPort === undefined) return undefined;
  const aggregator = new AggregatorRegistry();
  const server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://admin').pathname;
    if (path === '/healthz') return json(res, 200, { status: 'ok', workers: parts.members.size });
    if (path === '/readyz')
      return parts.isReady() ? json(res, 200, { status: 'ready' }) : json(res, 503, { status: 'not ready' });
    if (path === '/metrics') {
      aggregator.clusterMetrics().then(
        (text) => {
          res.writeHead(200, { 'content-type': aggregator.contentType });
          res.end(text + primaryMetrics(parts));
        },
        (err: Error) => json(res, 500, { error: `metrics: ${err.message}` }),
      );
      return;
    }
    const member = [...parts.members.values()].find((m) => m.ready && m.adminPort !== undefined);
    if (member === undefined) return json(res, 503, { error: 'no worker is ready to answer' });
    forward(req, res, member.adminPort!);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.adminPort ?? c.admin?.port ?? 9090, c.admin?.host ?? '127.0.0.1', () => resolve());
  });
  return server;
}

/** The primary's own figures, after the workers'. */
function primaryMetrics(parts: AdminParts): string {
  const lines = [
    '# HELP floodgate_workers Worker processes serving the traffic port now.',
    '# TYPE floodgate_workers gauge',
    `floodgate_workers ${parts.members.size}`,
    '# HELP floodgate_worker_restarts_total Workers that exited unasked and were replaced.',
    '# TYPE floodgate_worker_restarts_total counter',
    `floodgate_worker_restarts_total ${parts.restarts()}`,
  ];
  if (parts.host !== undefined)
    lines.push(
      '# HELP floodgate_cluster_store_calls_total Calls the workers made to the shared memory store (lease asks and returns, per-request decisions).',
      '# TYPE floodgate_cluster_store_calls_total counter',
      `floodgate_cluster_store_calls_total ${parts.host.calls}`,
      '# HELP floodgate_cluster_store_keys Keys the shared memory store holds state for.',
      '# TYPE floodgate_cluster_store_keys gauge',
      `floodgate_cluster_store_keys ${parts.host.keys}`,
      '# HELP floodgate_cluster_store_full_total Requests for a new key refused because the shared memory store held its most keys.',
      '# TYPE floodgate_cluster_store_full_total counter',
      `floodgate_cluster_store_full_total ${parts.host.full}`,
    );
  return `${lines.join('\n')}\n`;
}

/** Sends the request to a worker's own admin port and its answer back. */
function forward(req: IncomingMessage, res: ServerResponse, port: number): void {
  const upstream = request(
    { host: '127.0.0.1', port, method: req.method, path: req.url, headers: req.headers },
    (answer: IncomingMessage) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    },
  );
  upstream.on('error', (err) => {
    if (!res.headersSent) json(res, 502, { error: `the worker did not answer: ${err.message}` });
    else res.destroy();
  });
  req.pipe(upstream);
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}
