/**
 * The `floodgate` command line: `serve` runs the gateway, `ratelimit` runs the rate limit service
 * alone, `check` checks any file a command reads, offline, `schema` prints the config's JSON Schema.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Command } from 'commander';
import { PACKAGE_ROOT } from '../package-root.js';
import { runCheck, runSchema, runServe, type ServeFlags } from './commands.js';

// A reader that stopped reading (`floodgate --help | head`) is not an error: exit quietly, as a
// Unix filter does on SIGPIPE, instead of an unhandled EPIPE's stack trace.
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code === 'EPIPE') process.exit(0);
  throw err;
});

/** The server package's version, from its package.json. */
const { version } = JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8')) as {
  version: string;
};

const program = new Command('floodgate')
  .description('floodgate: a rate-limiting reverse proxy run from one config file')
  .version(version, '-V, --version', 'print the version of floodgate-server')
  .showHelpAfterError()
  .enablePositionalOptions()
  .exitOverride();

program
  .command('serve')
  .description('run the gateway: listen, rate-limit each route by its rules, forward to its upstream')
  .requiredOption('-c, --config <file>', 'the YAML config file')
  .option('--port <port>', 'listen on this port instead of listen.port (0: any free port)', parsePort)
  .option(
    '--admin-port <port>',
    'serve health, metrics and the admin API on this port instead of admin.port',
    parsePort,
  )
  .option('--demo-upstream', "also start a small demo service at the first route's upstream address")
  .option('--no-watch', 'do not reload when the config file changes (SIGHUP still reloads)')
  .option(
    '--workers <n>',
    "worker processes serving the port, instead of the config's workers: a number, or auto for one a core",
    parseWorkers,
  )
  .option('--drain-timeout-ms <ms>', 'longest wait for requests in flight on shutdown', (v) => Number(v), 10_000)
  .option(
    '--drain-ms <ms>',
    'how long the listener stays open once unready on SIGTERM, instead of shutdown.drainMs (0: close at once)',
    parseMs,
  )
  .action(async (opts: ServeFlags) => {
    process.exitCode = await runServe(opts);
  });

program
  .command('ratelimit')
  .description(
    "run only the rate limit service: Envoy's gRPC RateLimitService and the JSON API, from Envoy descriptor files",
  )
  .requiredOption(
    '-c, --config <file>',
    'an Envoy descriptor file (repeat for several; a domain may be defined once)',
    (v: string, all: string[] = []) => [...all, v],
  )
  .option(
    '--grpc-port <port>',
    "serve Envoy's RateLimitService (and gRPC health) on this port (0: any free port)",
    parsePort,
  )
  .option(
    '--http-port <port>',
    'serve the JSON API (POST /json, POST /v1/decide) on this port (0: any free port)',
    parsePort,
  )
  .option('--host <address>', 'the address to listen on', '127.0.0.1')
  .option(
    '--redis <host:port>',
    'keep counters in this Redis (redis://host:port also accepted), shared by every service on it',
  )
  .option('--redis-cluster <host:port,...>', 'keep counters in this Redis Cluster')
  .option(
    '--redis-password-env <name>',
    "Redis's password, from this environment variable (or give it in the address: redis://:password@host:port; rediss:// for TLS)",
  )
  .option('--redis-tls-ca <file>', 'trust this PEM CA for rediss:// (default: the system CAs)')
  .option(
    '--on-store-error <policy>',
    "when Redis fails or is slow: local (decide in this process with its share of each limit, written back to Redis when it answers), fail-open, fail-closed, or throw (gRPC UNAVAILABLE, so Envoy's failure_mode_deny decides)",
    'local',
  )
  .option(
    '--store-timeout-ms <ms>',
    'how long a decision waits for Redis before --on-store-error answers (default: adaptive, 3 x the recent p99 between 25 and 250 ms)',
  )
  .option(
    '--metrics-port <port>',
    'serve Prometheus metrics at GET /metrics on this port (0: any free port)',
    parsePort,
  )
  .option(
    '--response-headers <mode>',
    'headers asked of Envoy: draft (RateLimit-Policy, RateLimit), off, ratelimit (RateLimit-Limit/-Remaining/-Reset), x-ratelimit (X-RateLimit-*), or three names "Limit,Remaining,Reset"',
    'draft',
  )
  .option(
    '--health-follows-store <when>',
    'health checks answer NOT_SERVING while Redis is away: auto (only with --on-store-error throw or fail-closed), always, never',
    'auto',
  )
  .option('--shadow-mode', 'every limit in shadow mode: decided and counted, never refusing')
  .option(
    '--merge-domains',
    "let a domain span several --config files, their descriptors merged (envoyproxy/ratelimit's MERGE_DOMAIN_CONFIG)",
  )
  .option('--grpc-tls-cert <file>', 'serve gRPC over TLS with this PEM certificate (chain); needs --grpc-tls-key')
  .option('--grpc-tls-key <file>', "the PEM private key of --grpc-tls-cert's certificate")
  .option(
    '--grpc-tls-client-ca <file>',
    'require gRPC clients to present a certificate this PEM CA signed (mutual TLS)',
  )
  .option(
    '--key-secret-env <name>',
    'the environment variable holding the secret (16 characters or more) that descriptor values are hashed under before they name a counter or a metric label',
  )
  .option('--raw-values', 'keep descriptor values raw in store keys and metric labels (by default they are hashed)')
  .option('--no-watch', 'do not reload when a descriptor file changes (SIGHUP still reloads)')
  .option('--check', 'only read the descriptor files, print their domains (or every error) and stop')
  .addHelpText(
    'after',
    '\nWith neither port given it serves gRPC on 8081 and the JSON API on 8080. A change to a file, or\nSIGHUP, re-reads the files; a file with errors is refused and the running config kept. To run it\nbeside routes, use the rateLimitService section of a `floodgate serve` config instead.',
  )
  .action(
    async (opts: {
      config: string[];
      grpcPort?: number;
      httpPort?: number;
      host: string;
      redis?: string;
      redisCluster?: string;
      redisPasswordEnv?: string;
      redisTlsCa?: string;
      onStoreError: string;
      storeTimeoutMs?: string;
      metricsPort?: number;
      responseHeaders: string;
      healthFollowsStore: string;
      shadowMode?: boolean;
      mergeDomains?: boolean;
      tracing?: boolean;
      grpcTlsCert?: string;
      grpcTlsKey?: string;
      grpcTlsClientCa?: string;
      keySecretEnv?: string;
      rawValues?: boolean;
      watch: boolean;
      check?: boolean;
    }) => {
      // Loaded only for this command: it brings gRPC, which `serve` without a rate limit service never needs.
      const { runRatelimit } = await import('./ratelimit.js');
      process.exitCode = await runRatelimit(opts, { stdout: process.stdout, stderr: process.stderr, signals: process });
      if (opts.check !== true) process.exit(process.exitCode);
    },
  );

program
  .command('check')
  .description(
    'check a file offline: says what it is (gateway config, Envoy descriptor file, simulator scenario or trace) and which command reads it, and lists every problem with its line',
  )
  .argument('<file>', 'the file to check')
  .action(async (file: string) => {
    process.exitCode = await runCheck(file, process.stdout, process.stderr);
  });

program
  .command('schema')
  .description("print the config file's JSON Schema, for editors")
  .action(() => {
    process.exitCode = runSchema(process.stdout);
  });

program
  .command('simulate')
  .description('run traffic through policies on virtual time and score them (see floodgate simulate --help)')
  .helpOption(false)
  .allowUnknownOption()
  .allowExcessArguments()
  .argument('[args...]', "the simulator's own arguments, passed through")
  .action(async (args: string[]) => {
    const { runSimulateCommand } = await import('floodgate-simulator');
    process.exitCode = await runSimulateCommand(args, {
      stdout: process.stdout,
      stderr: process.stderr,
      cwd: process.cwd(),
    });
  });

function parsePort(value: string): number {
  const port = Number(value);
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new Error(`a port is a whole number from 0 to 65535, got "${value}"`);
  return port;
}

function parseWorkers(value: string): number | 'auto' {
  if (value === 'auto') return value;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > 256)
    throw new Error(`workers is a whole number from 1 to 256, or auto, got "${value}"`);
  return n;
}

function parseMs(value: string): number {
  const ms = Number(value);
  if (!Number.isInteger(ms) || ms < 0) throw new Error(`a time in ms is a whole number from 0 up, got "${value}"`);
  return ms;
}

try {
  await program.parseAsync(process.argv);
} catch (err) {
  const code = (err as { exitCode?: number }).exitCode;
  process.exitCode = typeof code === 'number' ? code : 1;
  if (code === undefined) process.stderr.write(`floodgate: ${(err as Error).message}\n`);
}
