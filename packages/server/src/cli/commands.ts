/** The work of each `floodgate` subcommand, apart from argument parsing. */
import cluster from 'node:cluster';
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { pino } from 'pino';
import { AggregatorRegistry } from 'prom-client';
import { loadConfig, type LoadedConfig } from '../config/load.js';
import { ConfigError, Locator, formatProblem } from '../config/problems.js';
import { workerProblems } from '../config/worker-checks.js';
import { jsonSchema } from '../config/schema.js';
import { startDemoUpstream } from '../demo/upstream.js';
import { Gateway, logWarnings } from '../process/gateway.js';
import { runPrimary } from '../process/primary.js';
import {
  PrimaryLink,
  WORKER_MARK,
  isWorkerMessage,
  workerCount,
  type FromWorker,
  type ToWorker,
} from '../process/workers.js';
import { LOG_REDACT_PATHS } from '../ops/redact.js';
import { checkFile } from './check.js';
import { watchFiles } from '../process/watch-files.js';

/**
 * runCheck checks `file` as the kind of file it is (gateway config, Envoy descriptor file,
 * simulator scenario or trace), says which command reads it, and returns the exit code (0 valid, 1
 * invalid). See {@link checkFile}.
 */
export function runCheck(file: string, stdout: NodeJS.WritableStream, stderr: NodeJS.WritableStream): Promise<number> {
  return checkFile(file, { stdout, stderr });
}

/** runSchema prints the config's JSON Schema and returns 0. */
export function runSchema(stdout: NodeJS.WritableStream): number {
  stdout.write(JSON.stringify(jsonSchema(), null, 2) + '\n');
  return 0;
}

/** ServeFlags are `floodgate serve`'s options as commander parses them. */
export interface ServeFlags {
  config: string;
  port?: number;
  adminPort?: number;
  demoUpstream?: boolean;
  watch: boolean;
  drainTimeoutMs: number;
  drainMs?: number;
  /** Overrides the config's `workers`: a number, or `auto` for one a core. */
  workers?: number | 'auto';
}

/**
 * runServe runs the gateway until SIGTERM or SIGINT, and returns the exit code. SIGTERM (what a
 * process manager sends) drains: unready, still serving for `shutdown.drainMs`, then closing.
 * SIGINT (Ctrl-C at a terminal, where no load balancer is watching `/readyz`) skips the drain
 * period and closes at once; requests in flight still finish. A second signal cuts either short.
 */
export async function runServe(flags: ServeFlags): Promise<number> {
  // A worker's and the primary's IPC keep the process alive: each exits with its code.
  if (cluster.isWorker && process.env['FLOODGATE_WORKER_INDEX'] !== undefined) process.exit(await runWorker(flags));
  const log = pino({ name: 'floodgate', redact: { paths: LOG_REDACT_PATHS, censor: '[redacted]' } });
  const file = resolve(flags.config);
  if (flags.demoUpstream === true) {
    const ok = await startDemo(file, log);
    if (!ok) return 1;
  }
  const loaded = await loadConfig(file).catch(() => undefined);
  const workers = loaded === undefined ? 1 : workerCount(flags.workers ?? loaded.config.workers);
  if (loaded !== undefined && flags.workers !== undefined && workers > 1) {
    // The config was checked for its own workers setting; --workers is checked here.
    const at = Locator.ofText(file, await readFile(file, 'utf8'));
    const problems = workerProblems(loaded.config, flags.workers, at);
    if (problems.length > 0) {
      log.fatal(
        { problems: problems.map(formatProblem) },
        `the config cannot run with --workers ${flags.workers}; not starting`,
      );
      return 1;
    }
  }
  if (loaded !== undefined && workers > 1 && loaded.config.store.type === 'memory') {
    const quota = loaded.domains.filter((d) => d.quota !== undefined).map((d) => d.domain);
    if (quota.length > 0) {
      log.fatal(
        { domains: quota, hint: 'use a Redis store (its ledger is shared by every process), or workers: 1' },
        'the rate limit quota service (RLQS) keeps its ledger in each process on the memory store: with workers, each would grant the whole quota; not starting',
      );
      return 1;
    }
  }
  // With workers, the primary logs the config's warnings once for the host (the workers do not).
  if (loaded !== undefined && workers > 1) logWarnings(log, loaded.warnings);
  if (loaded !== undefined && workers > 1)
    process.exit(
      await runPrimary({
        file,
        log,
        loaded,
        workers,
        watch: flags.watch,
        ...(flags.adminPort === undefined ? {} : { adminPort: flags.adminPort }),
        reread: () => loadConfig(file).catch((): LoadedConfig | undefined => undefined),
      }),
    );
  let gateway: Gateway;
  try {
    gateway = await Gateway.start({
      file,
      log,
      ...(flags.port === undefined ? {} : { port: flags.port }),
      ...(flags.adminPort === undefined ? {} : { adminPort: flags.adminPort }),
      drainTimeoutMs: flags.drainTimeoutMs,
      ...(flags.drainMs === undefined ? {} : { drainMs: flags.drainMs }),
    });
  } catch (err) {
    if (err instanceof ConfigError)
      log.fatal({ problems: err.problems.map(formatProblem) }, 'the config is invalid; not starting');
    else log.fatal({ error: (err as Error).message }, 'could not start');
    return 1;
  }
  const stopWatching = flags.watch
    ? watchFiles(
        () => [file, ...gateway.descriptorFiles, ...gateway.tlsFiles],
        () => void gateway.reload('file changed'),
      )
    : () => {};
  process.on('SIGHUP', () => void gateway.reload('SIGHUP'));
  const stopped = new Promise<void>((resolveStop) => {
    let stopping = false;
    const stop = (signal: 'SIGTERM' | 'SIGINT'): void => {
      // A second signal cuts the drain under way short: the operator wants the process gone now.
      if (stopping) return gateway.cutShutdown();
      stopping = true;
      stopWatching();
      if (signal === 'SIGINT') log.info('SIGINT: closing without the drain period (SIGTERM drains)');
      void gateway.shutdown(signal === 'SIGINT' ? { drainMs: 0 } : {}).then(resolveStop);
    };
    process.on('SIGTERM', () => stop('SIGTERM'));
    process.on('SIGINT', () => stop('SIGINT'));
  });
  // The try-it text comes once the signals are handled: a Ctrl-C right after it stops as documented.
  if (flags.demoUpstream === true) process.stderr.write(tryLine(gateway) + (await dashboardLine(file, gateway)) + '\n');
  await stopped;
  process.exit(0);
}

/**
 * runWorker runs one of the workers a primary forked: the gateway on the primary's shared store,
 * reloading and shutting down when the primary says (or on its own SIGTERM), and returns the exit
 * code.
 */
async function runWorker(flags: ServeFlags): Promise<number> {
  const index = Number(process.env['FLOODGATE_WORKER_INDEX']);
  const count = Number(process.env['FLOODGATE_WORKERS']);
  const log = pino({
    name: 'floodgate',
    base: { pid: process.pid, worker: index },
    redact: { paths: LOG_REDACT_PATHS, censor: '[redacted]' },
  });
  const link = new PrimaryLink((message: FromWorker) => void process.send?.(message));
  // Listen before starting: the primary's shutdown, or a signal to the whole group (Ctrl-C, systemd's
  // control group), may come while the gateway starts, and must not be lost or kill it half-made.
  let gateway: Gateway | undefined;
  // Set once a stop is asked: whether it skips the drain period (Ctrl-C), as one process does.
  let stopNow: boolean | undefined;
  let stopped: (() => void) | undefined;
  const stop = (now: boolean): void => {
    // The primary's message and a signal to the whole group come together: the first decides.
    if (stopNow !== undefined) return;
    stopNow = now;
    if (gateway !== undefined) void gateway.shutdown(now ? { drainMs: 0 } : {}).then(() => stopped?.());
  };
  process.on('message', (message: unknown) => {
    if (!isWorkerMessage<ToWorker>(message) || link.answered(message)) return;
    if (message.kind === 'reload') {
      // A worker still starting reads the config as it is now: nothing to reload yet.
      const done = gateway?.reload(message.why) ?? Promise.resolve({ applied: true, problems: [] });
      void done.then((result) =>
        process.send?.({ w: WORKER_MARK, kind: 'reloaded', id: message.id, result } satisfies FromWorker),
      );
    } else if (message.kind === 'shutdown') stop(message.now);
    else if (message.kind === 'cut') gateway?.cutShutdown();
  });
  // Only the primary's `cut` (its second signal) ends a drain early. SIGHUP is the primary's to spread.
  process.on('SIGTERM', () => stop(false));
  process.on('SIGINT', () => stop(true));
  process.on('SIGHUP', () => {});
  try {
    gateway = await Gateway.start({
      file: resolve(flags.config),
      log,
      ...(flags.port === undefined ? {} : { port: flags.port }),
      drainTimeoutMs: flags.drainTimeoutMs,
      ...(flags.drainMs === undefined ? {} : { drainMs: flags.drainMs }),
      worker: { role: { index, count }, link },
    });
  } catch (err) {
    log.fatal({ error: (err as Error).message }, 'worker could not start');
    return 1;
  }
  // The primary's /metrics asks every worker for its figures (prom-client's cluster aggregation):
  // making an AggregatorRegistry is what makes this worker answer.
  new AggregatorRegistry();
  AggregatorRegistry.setRegistries([gateway.metrics.registry]);
  await new Promise<void>((resolveStop) => {
    stopped = resolveStop;
    if (stopNow !== undefined) void gateway!.shutdown(stopNow ? { drainMs: 0 } : {}).then(resolveStop);
  });
  return 0;
}

/** The curl line a newcomer can run against the first route, to watch the headers count down to a 429. */
function tryLine(gateway: Gateway): string {
  const route = gateway.table.routes[0];
  if (route === undefined)
    return `\nfloodgate is listening (no routes). Metrics: http://127.0.0.1:${gateway.adminPort ?? '-'}/metrics\n`;
  const path = route.path.source.replace(/\*$/, 'hello').replace(/:[^/]+/g, '1');
  const service = gateway.rateLimitService;
  const serviceLine =
    service === undefined
      ? ''
      : `The rate limit service (domains ${service.domains.join(', ')}): gRPC on port ${service.grpcPort ?? '-'}, JSON API on port ${service.httpPort ?? '-'} (POST /v1/decide).\n`;
  return `\nfloodgate is listening. Try, several times in a row:\n\n  curl -i http://127.0.0.1:${gateway.port}${path}\n\nand watch RateLimit count down to a 429. Metrics: http://127.0.0.1:${gateway.adminPort ?? '-'}/metrics\n${serviceLine}`;
}

/** Where the dashboard is, or how to turn it on: the example config of `npm start` has no admin token. */
async function dashboardLine(file: string, gateway: Gateway): Promise<string> {
  const admin = (await loadConfig(file)).config.admin;
  const token = admin?.tokenEnv !== undefined ? process.env[admin.tokenEnv] : admin?.token;
  if (token !== undefined && admin?.dashboard?.enabled !== false)
    return `Dashboard: http://${admin?.host ?? '127.0.0.1'}:${gateway.adminPort ?? '-'}/dashboard (any user name, the admin token as the password).\n`;
  return 'Dashboard: off until the config has an admin token (admin.tokenEnv: VARIABLE, a variable holding 16+ characters).\n';
}

async function startDemo(file: string, log: pino.Logger): Promise<boolean> {
  let upstream: URL;
  try {
    const first = (await loadConfig(file)).config.routes[0];
    if (first === undefined) return true; // Nothing to stand in front of.
    upstream = new URL(first.upstream);
  } catch {
    return true; // The gateway reports the config's problems itself.
  }
  const host = upstream.hostname.replace(/^\[|\]$/g, '');
  try {
    await startDemoUpstream(host, Number(upstream.port || 80));
    log.info({ upstream: upstream.origin }, 'demo upstream started');
    return true;
  } catch (err) {
    log.fatal(
      { upstream: upstream.origin, error: (err as Error).message },
      'could not start the demo upstream: is that port taken?',
    );
    return false;
  }
}
