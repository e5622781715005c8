/** Helpers for case children: read numeric options, print the one JSON result line. */

import { parseArgs } from 'node:util';

/** caseArgs parses `--name value` options of a case child. */
export function caseArgs(names: readonly string[]): Record<string, string> {
  const options = Object.fromEntries(names.map((n) => [n, { type: 'string' as const }]));
  const { values } = parseArgs({ args: process.argv.slice(2), options, strict: true, allowPositionals: false });
  const out: Record<string, string> = {};
  for (const name of names) {
    const v = values[name];
    if (typeof v !== 'string') throw new Error(`missing --${name}`);
    out[name] = v;
  }
  return out;
}

/** numberArg reads a positive number option. */
export function numberArg(args: Record<string, string>, name: string): number {
  const v = Number(args[name]);
  if (!(Number.isFinite(v) && v > 0)) throw new Error(`--${name} must be a positive number, got ${args[name]}`);
  return v;
}

/** printResult writes the result as one JSON line and exits once it is flushed. */
export function printResult(result: object): void {
  process.stdout.write(JSON.stringify(result) + '\n', () => process.exit(0));
}

/** runCase runs a child's main and reports a failure on stderr with a non-zero exit. */
export function runCase(main: () => Promise<void>): void {
  main().catch((err: unknown) => {
    process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  });
}
