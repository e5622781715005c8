/**
 * The pack test: builds and packs the tarball once, unpacks it, checks what it carries, and then
 * installs it (without the network) into one temporary app per framework, each with only that
 * framework installed. Every app compiles strictly without skipLibCheck under the module
 * resolution given in its row, and runs requests through its adapter against a real server.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { rm } from 'node:fs/promises';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { PACKAGE_DIR } from '../../scripts/build.js';
import { startRedisServer, type RedisServers } from '../support/redis-server.js';
import { compile, makeApp, packAndUnpack, runApp, type AppSpec, type Packed } from './support/temp-app.js';
import { checkManifest, importGraph, isBare, isPackage } from './support/tarball.js';

const run = promisify(execFile);

const NODE16 = { module: 'node16', moduleResolution: 'node16', outDir: 'out' };
const NODENEXT = { module: 'nodenext', moduleResolution: 'nodenext', outDir: 'out' };
const BUNDLER = { module: 'esnext', moduleResolution: 'bundler', outDir: 'out' };
const NODE10 = { module: 'commonjs', moduleResolution: 'node10', outDir: 'out' };

/** AppCase is one temporary app: how it is laid out, what it runs, and what it must print. */
interface AppCase {
  spec: AppSpec;
  /** Entry files to run, each with what its last line must print. */
  runs: [entry: string, expected: unknown][];
}

const twoRequests = { statuses: [200, 429] };

const CASES: AppCase[] = [
  {
    spec: { name: 'node', type: 'module', links: ['@types/node'], tsconfigs: { 'tsconfig.json': NODE16 } },
    runs: [['out/main.js', twoRequests]],
  },
  {
    spec: {
      name: 'express',
      type: 'module',
      links: ['express', '@types/express', '@types/node'],
      tsconfigs: { 'tsconfig.json': NODENEXT },
    },
    runs: [['out/main.js', twoRequests]],
  },
  {
    spec: {
      name: 'fastify',
      type: 'module',
      links: ['fastify', '@types/node'],
      tsconfigs: { 'tsconfig.json': BUNDLER },
    },
    runs: [['out/main.js', twoRequests]],
  },
  {
    // In a Koa-only install, content-disposition is koa's 1.x (no types of its own), so @types/koa's
    // import of it finds @types/content-disposition. The workspace hoists express's 2.x instead,
    // whose own types @types/koa does not fit; `paths` restores what a Koa-only app resolves.
    spec: {
      name: 'koa',
      type: 'module',
      links: ['koa', '@types/koa', '@types/content-disposition', '@types/node'],
      tsconfigs: {
        'tsconfig.json': { ...NODE16, paths: { 'content-disposition': ['./node_modules/@types/content-disposition'] } },
      },
    },
    runs: [['out/main.js', twoRequests]],
  },
  {
    // Hono's own types use the fetch API's DOM types (MessageEvent, CloseEvent), so its apps add DOM.
    spec: {
      name: 'hono',
      type: 'module',
      links: ['hono', '@hono/node-server', '@types/node'],
      tsconfigs: { 'tsconfig.json': { ...BUNDLER, lib: ['ES2022', 'DOM'] } },
    },
    runs: [['out/main.js', twoRequests]],
  },
  {
    spec: {
      name: 'redis',
      type: 'module',
      links: ['ioredis', '@types/node'],
      tsconfigs: { 'tsconfig.json': NODENEXT },
    },
    runs: [['out/main.js', { allowed: [true, false] }]],
  },
  {
    spec: {
      name: 'cjs',
      type: 'commonjs',
      links: ['@types/node'],
      tsconfigs: { 'tsconfig.json': NODE10, 'tsconfig.node16.json': { ...NODE16, outDir: 'out16' } },
    },
    runs: [
      ['out/main.js', { ...twoRequests, code: 'INVALID_OPTION', kinds: ['function', 'function'] }],
      ['out16/main.js', { ...twoRequests, code: 'INVALID_OPTION', kinds: ['function', 'function'] }],
      [
        'require.cjs',
        {
          allowed: [true, false],
          code: 'INVALID_COST',
          kinds: ['function', 'function', 'function', 'function'],
          builds: ['cjs'],
        },
      ],
    ],
  },
];

/** inPairs runs `task` over `items`, two at a time (the machine's cores are shared). */
async function inPairs<T, R>(items: readonly T[], task: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = [];
  for (let i = 0; i < items.length; i += 2) results.push(...(await Promise.all(items.slice(i, i + 2).map(task))));
  return results;
}

describe('the packed tarball', { timeout: 300_000 }, () => {
  let packed: Packed;
  let redis: RedisServers;
  before(async () => {
    const starting = startRedisServer();
    // Assigned before the pack is awaited, so that a failed build still stops the server.
    starting.then(
      (servers) => (redis = servers),
      () => {},
    );
    packed = await packAndUnpack();
    redis = await starting;
  });
  after(async () => {
    await redis?.stop();
    if (packed) await rm(packed.root, { recursive: true, force: true });
  });

  it('carries README, LICENSE, CHANGELOG and both builds, and no sources, maps or tests', async () => {
    const { stdout } = await run('tar', ['tzf', packed.tarball]);
    const files = stdout
      .trim()
      .split('\n')
      .map((f) => f.replace(/^package\//, ''));
    for (const file of ['README.md', 'LICENSE', 'CHANGELOG.md', 'package.json', 'dist/cjs/package.json']) {
      assert.ok(files.includes(file), `${file} is in the tarball`);
    }
    const stray = files.filter(
      (f) =>
        !/^(README\.md|LICENSE|CHANGELOG\.md|package\.json|dist\/(esm|cjs)\/.+\.(js|d\.ts)|dist\/cjs\/package\.json)$/.test(
          f,
        ),
    );
    assert.deepEqual(stray, [], 'nothing but the builds and the documents');
    const esm = files.filter((f) => f.startsWith('dist/esm/')).map((f) => f.slice('dist/esm/'.length));
    const cjs = files
      .filter((f) => f.startsWith('dist/cjs/') && f !== 'dist/cjs/package.json')
      .map((f) => f.slice('dist/cjs/'.length));
    assert.deepEqual(cjs.sort(), esm.sort(), 'the two builds hold the same modules');
    assert.ok(esm.some((f) => f.endsWith('.d.ts')) && esm.some((f) => f.endsWith('.js')));
  });

  it('refuses to pack the workspace folder itself, whose manifest points at sources', async () => {
    const packing = run('npm', ['pack', '--dry-run', '--json'], { cwd: PACKAGE_DIR });
    await assert.rejects(packing, (error: Error & { stderr?: string }) => /pack:tarball/.test(error.stderr ?? ''));
  });

  it('has a manifest without the source condition, whose every target is shipped', async () => {
    assert.deepEqual(await checkManifest(packed.packageDir), []);
  });

  it('keeps floodgate/http free of frameworks, and each adapter to its own', async () => {
    const esm = `${packed.packageDir}/dist/esm`;
    // The core, Redis and framework-neutral HTTP types import nothing, not even node's own types,
    // and Hono's adapter only Hono: they type-check on any runtime, without @types/node.
    const bareOnly: Record<string, string[]> = {
      'index.d.ts': [],
      'redis.d.ts': [],
      'http/index.d.ts': [],
      'http/adapters/hono.d.ts': ['hono'],
    };
    for (const [entry, allowed] of Object.entries(bareOnly)) {
      assert.deepEqual(
        [...(await importGraph(esm, entry))].filter(isBare),
        allowed,
        `${entry} imports ${allowed.join(', ') || 'nothing'}`,
      );
    }
    const own: Record<string, string[]> = { node: [], express: ['express'], fastify: ['fastify'], koa: ['koa'] };
    for (const [adapter, allowed] of Object.entries(own)) {
      const bare = [...(await importGraph(esm, `http/adapters/${adapter}.d.ts`))].filter(isPackage);
      assert.deepEqual(
        bare,
        allowed,
        `floodgate/http/${adapter} imports no package but ${allowed.join(', ') || "node's types"}`,
      );
    }
  });

  it('compiles strictly, without skipLibCheck, in an app per framework and resolution, and runs it', async () => {
    const apps = await inPairs(CASES, async (app) => ({ app, dir: await makeApp(packed, app.spec) }));
    const builds = apps.flatMap(({ app, dir }) =>
      Object.keys(app.spec.tsconfigs ?? {}).map((tsconfig) => ({ app, dir, tsconfig })),
    );
    const diagnostics = builds.map(({ app, dir, tsconfig }) => ({
      where: `${app.spec.name}/${tsconfig}`,
      out: compile(dir, tsconfig),
    }));
    assert.deepEqual(
      diagnostics.filter((d) => d.out !== ''),
      [],
    );
    const env = { REDIS_PORT: String(redis.ports[0]) };
    const runs = apps.flatMap(({ app, dir }) =>
      app.runs.map(([entry, expected]) => ({ where: `${app.spec.name}/${entry}`, dir, entry, expected })),
    );
    const results = await inPairs(runs, async (r) => ({ where: r.where, result: await runApp(r.dir, r.entry, env) }));
    assert.deepEqual(
      results,
      runs.map((r) => ({ where: r.where, result: r.expected })),
    );
  });
});
