/**
 * Temporary apps for the pack test, made without the network: each app's `node_modules` holds a
 * copy of the unpacked tarball (copied, not linked, so that its imports resolve from the app as
 * they would after `npm install`) and symlinks to just the packages it names from the workspace.
 */
import { execFile } from 'node:child_process';
import { cp, mkdir, mkdtemp, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import ts from 'typescript';
import { packTarball } from '../../../scripts/build.js';

const run = promisify(execFile);

/** WORKSPACE_MODULES is the workspace root's node_modules, where the linked packages come from. */
export const WORKSPACE_MODULES = resolve(fileURLToPath(new URL('../../../../../node_modules', import.meta.url)));

/** APPS_DIR holds each app's sources (`apps/<name>/...`), type-checked with the workspace too. */
export const APPS_DIR = fileURLToPath(new URL('../apps', import.meta.url));

/** Packed is a tarball packed and unpacked into a temp dir. */
export interface Packed {
  /** The temp dir holding everything; remove it when done. */
  root: string;
  tarball: string;
  /** The unpacked package folder (the tarball's `package/`). */
  packageDir: string;
}

/** packAndUnpack builds and packs floodgate into a fresh temp dir and unpacks the tarball there. */
export async function packAndUnpack(): Promise<Packed> {
  const root = await mkdtemp(join(tmpdir(), 'floodgate-pack-'));
  const tarball = await packTarball(root);
  await run('tar', ['xzf', tarball, '-C', root]);
  return { root, tarball, packageDir: join(root, 'package') };
}

/** AppSpec describes one temporary app. */
export interface AppSpec {
  name: string;
  /** The app's package.json `type`. */
  type: 'module' | 'commonjs';
  /** Packages linked from the workspace, e.g. `['express', '@types/express', '@types/node']`. */
  links: readonly string[];
  /** Files copied from `apps/<from>/` (default: the app's name). */
  from?: string;
  /** tsconfig.json files to write, by file name: each one's compilerOptions on top of strict defaults. */
  tsconfigs?: Record<string, Record<string, unknown>>;
}

/** STRICT holds the options every app compiles with: strict, and never skipLibCheck. */
const STRICT = {
  strict: true,
  skipLibCheck: false,
  target: 'ES2022',
  lib: ['ES2022'],
  types: ['node'],
  noEmitOnError: true,
};

/** makeApp lays out the app under `packed.root/apps/<name>` and returns its folder. */
export async function makeApp(packed: Packed, spec: AppSpec): Promise<string> {
  const dir = join(packed.root, 'apps', spec.name);
  await cp(join(APPS_DIR, spec.from ?? spec.name), dir, { recursive: true });
  await cp(packed.packageDir, join(dir, 'node_modules', 'floodgate'), { recursive: true });
  for (const name of spec.links) {
    const target = join(dir, 'node_modules', name);
    await mkdir(dirname(target), { recursive: true });
    await symlink(join(WORKSPACE_MODULES, name), target, 'dir');
  }
  await writeFile(
    join(dir, 'package.json'),
    JSON.stringify({ name: `app-${spec.name}`, private: true, type: spec.type }),
  );
  for (const [file, options] of Object.entries(spec.tsconfigs ?? {})) {
    const tsconfig = { compilerOptions: { ...STRICT, ...options }, files: ['main.ts'] };
    await writeFile(join(dir, file), JSON.stringify(tsconfig, null, 2));
  }
  return dir;
}

/** A parsed declaration or source file, shared by every app's program (keyed by path and format). */
const parsed = new Map<string, ts.SourceFile>();

function sharingHost(options: ts.CompilerOptions): ts.CompilerHost {
  const host = ts.createCompilerHost(options);
  const read = host.getSourceFile.bind(host);
  host.getSourceFile = (fileName, languageVersion, onError, shouldCreate) => {
    const format =
      typeof languageVersion === 'object'
        ? `${languageVersion.languageVersion}:${languageVersion.impliedNodeFormat}`
        : `${languageVersion}`;
    const key = `${fileName}|${format}`;
    let file = parsed.get(key);
    if (file === undefined) {
      file = read(fileName, languageVersion, onError, shouldCreate);
      if (file !== undefined) parsed.set(key, file);
    }
    return file;
  };
  return host;
}

/**
 * compile type-checks and emits the app under one of its tsconfigs, as `tsc -p` would, and returns
 * its diagnostics formatted (empty: compiled). Programs share parsed library files, so the many
 * small apps parse `@types/node` and each framework's types once.
 */
export function compile(dir: string, tsconfig: string): string {
  const config = ts.getParsedCommandLineOfConfigFile(
    join(dir, tsconfig),
    {},
    { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => {} },
  );
  if (config === undefined) return `cannot read ${tsconfig}`;
  const program = ts.createProgram({
    rootNames: config.fileNames,
    options: config.options,
    host: sharingHost(config.options),
  });
  const diagnostics = [...config.errors, ...ts.getPreEmitDiagnostics(program)];
  if (diagnostics.length === 0) diagnostics.push(...program.emit().diagnostics);
  const formatHost = { getCanonicalFileName: (f: string) => f, getCurrentDirectory: () => dir, getNewLine: () => '\n' };
  return ts.formatDiagnostics(diagnostics, formatHost);
}

/** runApp runs `node <entry>` in the app (10 s at most) and returns the JSON its last line prints. */
export async function runApp(dir: string, entry: string, env: Record<string, string> = {}): Promise<unknown> {
  const { stdout } = await run(process.execPath, [entry], {
    cwd: dir,
    timeout: 10_000,
    env: { ...process.env, ...env },
  });
  const lines = stdout.trim().split('\n');
  return JSON.parse(lines[lines.length - 1] ?? 'null');
}

/** makeTempDir returns a fresh temp dir under the system's. */
export function makeTempDir(prefix: string): Promise<string> {
  return mkdtemp(join(tmpdir(), prefix));
}
