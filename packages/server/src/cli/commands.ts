/** The work of each `floodgate` subcommand, apart from argument parsing. */
import { resolve } from 'node:path';
import { pino } from 'pino';
import { loadConfig } from '../config/load.js';
import { ConfigError, formatProblem } from '../config/problems.js';
import { jsonSchema } from '../config/schema.js';
import { startDemoUpstream } from '../demo/upstream.js';
import { Gateway } from '../process/gateway.js';
import { LOG_REDACT_PATHS } from '../ops/redact.js';
import { checkFile } from './check.js';
import { watchFiles } from './watch-files.js';

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
}

/**
 * runServe runs the gateway until SIGTERM or SIGINT, and returns the exit code. SIGTERM (what a
 * process manager sends) drains: unready, still serving for `shutdown.drainMs`, then closing.
 * SIGINT (Ctrl-C at a terminal, where no load balancer is watching `/readyz`) skips the drain
 * period and closes at once; requests in flight still finish. A second signal cuts either short.
 */
export async function runServe(flags: ServeFlags): Promise<number> {
  const log = pino({ name: 'floodgate', redact: { paths: LOG_REDACT_PATHS, censor: '[redacted]' } });
  const file = resolve(flags.config);
  if (flags.demoUpstream === true) {
    const ok = await startDemo(file, log);
    if (!ok) return 1;
  }
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
