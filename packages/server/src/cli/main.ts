/**
 * The `floodgate` command line: `serve` runs the gateway, `check` validates a config offline,
 * `schema` prints the config's JSON Schema.
 */
import { Command } from 'commander';
import { runCheck, runSchema, runServe } from './commands.js';

const program = new Command('floodgate')
  .description('floodgate: a rate-limiting reverse proxy run from one config file')
  .showHelpAfterError()
  .enablePositionalOptions()
  .exitOverride();

program
  .command('serve')
  .description('run the gateway: listen, rate-limit each route by its rules, forward to its upstream')
  .requiredOption('-c, --config <file>', 'the YAML config file')
  .option('--port <port>', 'listen on this port instead of listen.port (0: any free port)', parsePort)
  .option('--admin-port <port>', 'serve health, metrics and the admin API on this port instead of admin.port', parsePort)
  .option('--demo-upstream', 'also start a small demo service at the first route\'s upstream address')
  .option('--no-watch', 'do not reload when the config file changes (SIGHUP still reloads)')
  .option('--drain-timeout-ms <ms>', 'longest wait for requests in flight on shutdown', (v) => Number(v), 10_000)
  .action(async (opts: ServeFlags) => {
    process.exitCode = await runServe(opts);
  });

program
  .command('check')
  .description('validate a config file offline and list every problem with its line and a fix')
  .argument('<file>', 'the YAML config file')
  .action(async (file: string) => {
    process.exitCode = await runCheck(file, process.stdout, process.stderr);
  });

program
  .command('schema')
  .description('print the config file\'s JSON Schema, for editors')
  .action(() => {
    process.exitCode = runSchema(process.stdout);
  });

program
  .command('simulate')
  .description('run traffic through policies on virtual time and score them (see floodgate simulate --help)')
  .helpOption(false)
  .allowUnknownOption()
  .allowExcessArguments()
  .argument('[args...]', 'the simulator\'s own arguments, passed through')
  .action(async (args: string[]) => {
    const { runSimulateCommand } = await import('floodgate-simulator');
    process.exitCode = await runSimulateCommand(args, { stdout: process.stdout, stderr: process.stderr, cwd: process.cwd() });
  });

/** ServeFlags are `floodgate serve`'s options as commander parses them. */
export interface ServeFlags {
  config: string;
  port?: number;
  adminPort?: number;
  demoUpstream?: boolean;
  watch: boolean;
  drainTimeoutMs: number;
}

function parsePort(value: string): number {
  const port = Number(value);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`a port is a whole number from 0 to 65535, got "${value}"`);
  return port;
}

try {
  await program.parseAsync(process.argv);
} catch (err) {
  const code = (err as { exitCode?: number }).exitCode;
  process.exitCode = typeof code === 'number' ? code : 1;
  if (code === undefined) process.stderr.write(`floodgate: ${(err as Error).message}\n`);
}
