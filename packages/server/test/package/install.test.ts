/**
 * The install test: packs floodgate, floodgate-simulator and floodgate-server, installs the three
 * tarballs with production dependencies only into an empty folder (one `npm install`, from the
 * registry), and runs the installed `floodgate` command: `--version`, then `serve` on free loopback
 * ports in front of a real upstream, where one request is proxied (200) and the next refused (429),
 * in the one process that was spawned, until SIGTERM drains it.
 */
import assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { access, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { call } from '../support/http.js';
import { startUpstream, type TestUpstream } from '../support/upstream.js';
import { installAll, type Installed } from './support/install.js';

const run = promisify(execFile);

const SERVER_VERSION = (
  JSON.parse(await readFile(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }
).version;

const exists = (path: string): Promise<boolean> =>
  access(path).then(
    () => true,
    () => false,
  );

/** config returns a one-route, one-rule gateway config in front of `upstream`. */
function config(upstream: string): string {
  return `
listen: { host: 127.0.0.1, port: 0 }
admin: { host: 127.0.0.1, port: 0 }
store: { type: memory }
routes:
  - name: api
    match: { path: /api/* }
    upstream: ${upstream}
    rules:
      - name: per-client
        policy: { algorithm: fixedWindow, limit: 1, windowMs: 600000 }
        key: { type: ip }
`;
}

/** firstLog resolves with the first JSON log line on `child`'s stdout whose msg is `msg`. */
function firstLog(child: ChildProcess, msg: string): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    let buffered = '';
    let stderr = '';
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const onData = (chunk: Buffer): void => {
      buffered += chunk.toString();
      for (let nl = buffered.indexOf('\n'); nl >= 0; nl = buffered.indexOf('\n')) {
        const line = buffered.slice(0, nl);
        buffered = buffered.slice(nl + 1);
        const parsed = JSON.parse(line) as Record<string, unknown>;
        if (parsed['msg'] === msg) {
          child.stdout!.off('data', onData);
          resolve(parsed);
        }
      }
    };
    child.stdout!.on('data', onData);
    child.once('exit', (code) =>
      reject(new Error(`floodgate exited (${String(code)}) before "${msg}":\n${buffered}\n${stderr}`)),
    );
  });
}

describe('floodgate installed from its tarballs', { timeout: 240_000 }, () => {
  let installed: Installed;
  let upstream: TestUpstream;

  before(async () => {
    [installed, upstream] = await Promise.all([installAll(), startUpstream()]);
  });
  after(async () => {
    await upstream?.close();
    if (installed !== undefined) await rm(installed.root, { recursive: true, force: true });
  });

  it('installs built JavaScript and production dependencies only', async () => {
    const server = join(installed.appDir, 'node_modules', 'floodgate-server');
    for (const file of ['dist/cli/main.js', 'proto/envoy/service/ratelimit/v3/rls.proto', 'LICENSE'])
      assert.ok(await exists(join(server, file)), `${file} is installed`);
    assert.equal(await exists(join(server, 'src')), false, 'no sources are shipped');
    assert.ok(await exists(join(installed.appDir, 'node_modules', 'floodgate-simulator', 'dist', 'index.js')));
    assert.equal(await exists(join(installed.appDir, 'node_modules', 'tsx')), false, 'tsx is not installed');
    const manifest = await readFile(join(server, 'package.json'), 'utf8');
    assert.doesNotMatch(manifest, /floodgate-source|"scripts"|"private"/);
  });

  it('prints its version', async () => {
    const { stdout } = await run(installed.bin, ['--version'], { timeout: 20_000 });
    assert.equal(stdout.trim(), SERVER_VERSION);
  });

  it('serves: a proxied 200, then a 429, in the one process spawned, and drains on SIGTERM', async () => {
    const configFile = join(installed.appDir, 'floodgate.yaml');
    await writeFile(configFile, config(upstream.origin));
    const child = spawn(installed.bin, ['serve', '--config', 'floodgate.yaml'], {
      cwd: installed.appDir,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    try {
      const listening = await firstLog(child, 'listening');
      assert.equal(listening['pid'], child.pid, 'the gateway runs in the spawned process, not a child of it');
      const url = `http://127.0.0.1:${String(listening['port'])}/api/hello`;
      assert.equal((await call(url)).status, 200);
      assert.equal((await call(url)).status, 429);
      assert.equal((await call(`http://127.0.0.1:${String(listening['adminPort'])}/healthz`)).status, 200);
      child.kill('SIGTERM');
      assert.equal(await exited, 0);
    } finally {
      child.kill('SIGKILL');
    }
  });
});
