/**
 * Bundles the `floodgate` command for publishing: esbuild from `src/cli/main.ts` (the workspace's
 * `floodgate` library from its sources, as the source condition resolves it) into ES modules in
 * `dist/cli/`: `main.js` and the chunks of what it loads only when asked (the rate limit service,
 * gRPC). Node then reads and links a handful of files at start instead of some three hundred,
 * which is most of what starting costs (see bench/startup.ts).
 *
 * Left out of the bundle, installed as dependencies: gRPC and its proto loader (loaded only with
 * a rate limit service), the OpenTelemetry API (one copy per process, shared with the
 * application's tracing SDK), ioredis (only with a Redis store) and floodgate-simulator (its own
 * package, for `floodgate simulate` and `check` of scenarios). pino is bundled: floodgate uses no
 * pino transport (the one part of pino that starts worker threads from its own files), and pino's
 * two dozen files cost more to find and load at every start than their code does to parse.
 * prom-client is bundled with its OpenTelemetry import made lazy ({@link lazyOtelInPromClient}).
 * What is bundled keeps its licence: `dist/cli/THIRD-PARTY-LICENSES.txt` holds the licence text of
 * every package the bundle carries code of.
 */
import { readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { join, relative, resolve, sep } from 'node:path';
import { build, type Metafile, type Plugin } from 'esbuild';

/** EXTERNAL are the packages the bundle imports at run time instead of carrying. */
export const EXTERNAL: readonly string[] = [
  '@grpc/grpc-js',
  '@grpc/proto-loader',
  '@opentelemetry/api',
  'ioredis',
  'floodgate-simulator',
];

/** The line of prom-client's process CPU metric that loads OpenTelemetry's API, and what replaces it. */
const PROM_OTEL_IMPORT = "const OtelApi = require('@opentelemetry/api');";
const PROM_OTEL_LAZY =
  "let otelApi; const OtelApi = { get trace() { return (otelApi ??= require('@opentelemetry/api')).trace; }, get context() { return (otelApi ??= require('@opentelemetry/api')).context; } };";

/**
 * lazyOtelInPromClient: prom-client's process CPU metric loads OpenTelemetry's API when prom-client
 * loads, for one use, exemplars (the current span's ids on the metric), which floodgate does not
 * enable; loading it cost about 78 M instructions at every start (its fifty-odd files). This makes
 * that import happen on first use instead. It fails the build if a new prom-client no longer has
 * the line, rather than bundling it unchanged.
 */
const lazyOtelInPromClient: Plugin = {
  name: 'lazy-otel-in-prom-client',
  setup(build) {
    build.onLoad({ filter: /prom-client[\\/]lib[\\/]metrics[\\/]processCpuTotal\.js$/ }, async (args) => {
      const source = await readFile(args.path, 'utf8');
      if (!source.includes(PROM_OTEL_IMPORT))
        throw new Error(`${args.path}: no longer has \`${PROM_OTEL_IMPORT}\`; look again at lazyOtelInPromClient`);
      return { contents: source.replace(PROM_OTEL_IMPORT, PROM_OTEL_LAZY), loader: 'js' };
    });
  },
};

/** bundleCli writes the bundle of `packageDir`'s CLI into `distDir/cli` (emptied first) and returns that folder. */
export async function bundleCli(packageDir: string, distDir: string): Promise<string> {
  await rm(distDir, { recursive: true, force: true });
  const outdir = join(distDir, 'cli');
  const result = await build({
    entryPoints: [join(packageDir, 'src', 'cli', 'main.ts')],
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    outdir,
    absWorkingDir: packageDir,
    conditions: ['floodgate-source'],
    external: [...EXTERNAL],
    plugins: [lazyOtelInPromClient],
    // CommonJS packages in the bundle call require() for Node's own modules.
    banner: {
      js: "import { createRequire as __floodgateRequire } from 'node:module';\nconst require = __floodgateRequire(import.meta.url);",
    },
    legalComments: 'none',
    metafile: true,
    logLevel: 'warning',
  });
  await writeFile(join(outdir, 'THIRD-PARTY-LICENSES.txt'), await licences(result.metafile, packageDir));
  return outdir;
}

/** The licence texts of the npm packages whose code the bundle carries, one after another. */
async function licences(metafile: Metafile, packageDir: string): Promise<string> {
  const packages = new Set<string>();
  for (const input of Object.keys(metafile.inputs)) {
    const parts = resolve(packageDir, input).split(sep);
    const at = parts.lastIndexOf('node_modules');
    if (at < 0) continue;
    const name = parts[at + 1]!.startsWith('@') ? `${parts[at + 1]}/${parts[at + 2]}` : parts[at + 1]!;
    packages.add([...parts.slice(0, at + 1), name].join(sep));
  }
  const sections: string[] = [];
  for (const full of [...packages].sort()) {
    const manifest = JSON.parse(await readFile(join(full, 'package.json'), 'utf8')) as {
      name: string;
      version: string;
      license?: string;
    };
    const file = (await readdir(full)).find((f) => /^(licen[cs]e|copying)(\.|$)/i.test(f));
    if (file === undefined)
      throw new Error(`${relative(packageDir, full).split(sep).join('/')}: no licence file to carry into the bundle`);
    const text = await readFile(join(full, file), 'utf8');
    sections.push(`${manifest.name}@${manifest.version} (${manifest.license ?? 'see below'})\n\n${text.trim()}\n`);
  }
  return `The floodgate command's bundle (dist/cli) carries code of these packages, under these licences.\n\n${sections.join('\n' + '-'.repeat(78) + '\n\n')}`;
}
