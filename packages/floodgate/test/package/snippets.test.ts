/**
 * Every ```ts block of the package README and of docs/*.md is type-checked against the source (one program, the
 * workspace's compiler options) and then run as its own module, the Redis ones against a
 * test-started redis-server. A snippet that no longer compiles or throws fails here. A block fenced
 * ```ts fragment is a piece of a program whose names are defined around it in prose (docs/library.md
 * has such pieces): the regex below leaves it out, neither checked nor run.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import ts from 'typescript';
import { startRedisServer, type RedisServers } from '../support/redis-server.js';
import { WORKSPACE_MODULES } from './support/temp-app.js';

const run = promisify(execFile);
const README = fileURLToPath(new URL('../../README.md', import.meta.url));
const DOCS = fileURLToPath(new URL('../../../../docs/', import.meta.url));
const WORKSPACE_TSCONFIG = fileURLToPath(new URL('../../../../tsconfig.json', import.meta.url));

/** snippetsOf returns the body of every ```ts fenced block in a Markdown text, in order. */
function snippetsOf(markdown: string): string[] {
  return [...markdown.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((m) => m[1]!);
}

function typeCheck(files: readonly string[], dir: string): string {
  const config = ts.getParsedCommandLineOfConfigFile(
    WORKSPACE_TSCONFIG,
    {},
    { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => {} },
  );
  assert.ok(config, 'the workspace tsconfig parses');
  const program = ts.createProgram({ rootNames: files, options: { ...config.options, noEmit: true } });
  const formatHost = { getCanonicalFileName: (f: string) => f, getCurrentDirectory: () => dir, getNewLine: () => '\n' };
  return ts.formatDiagnostics(ts.getPreEmitDiagnostics(program), formatHost);
}

/** markdownFiles returns the package README and every page under docs/. */
async function markdownFiles(): Promise<string[]> {
  const docs = (await readdir(DOCS)).filter((f) => f.endsWith('.md')).sort();
  return [README, ...docs.map((f) => join(DOCS, f))];
}

describe('the README and docs snippets', { timeout: 180_000 }, () => {
  let dir: string;
  let files: string[];
  let redis: RedisServers | undefined;
  before(async () => {
    const starting = startRedisServer();
    starting.then(
      (servers) => (redis = servers),
      () => {},
    );
    dir = await mkdtemp(join(tmpdir(), 'floodgate-snippets-'));
    await symlink(WORKSPACE_MODULES, join(dir, 'node_modules'), 'dir');
    await writeFile(join(dir, 'package.json'), '{ "type": "module" }');
    const snippets: string[] = [];
    for (const page of await markdownFiles()) snippets.push(...snippetsOf(await readFile(page, 'utf8')));
    files = await Promise.all(
      snippets.map(async (code, i) => {
        const file = join(dir, `snippet-${i + 1}.ts`);
        await writeFile(file, code);
        return file;
      }),
    );
    await starting;
  });
  after(async () => {
    await redis?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('finds the snippets', () => {
    assert.ok(files.length >= 15, `found ${files.length}`);
  });

  it('type-check against the source', () => {
    assert.equal(typeCheck(files, dir), '');
  });

  it('run to the end without an error', async () => {
    const env = { ...process.env, REDIS_URL: `redis://127.0.0.1:${redis?.ports[0]}` };
    const failures: string[] = [];
    for (let i = 0; i < files.length; i += 2) {
      await Promise.all(
        files.slice(i, i + 2).map(async (file) => {
          const args = ['--conditions=floodgate-source', '--import', 'tsx', file];
          await run(process.execPath, args, { cwd: dir, env, timeout: 20_000 }).catch(
            (error: Error & { stderr?: string }) => {
              failures.push(`${file}: ${error.stderr || error.message}`);
            },
          );
        }),
      );
    }
    assert.deepEqual(failures, []);
  });
});
