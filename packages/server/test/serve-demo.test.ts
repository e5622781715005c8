// floodgate serve --demo-upstream (what npm start runs): the try-it text says where the dashboard is,
// or how to turn it on, the demo upstream answers through the gateway, and Ctrl-C stops it at once.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';
import { FLOODGATE_BIN } from './support/cli.js';
import { call } from './support/http.js';
import { closedPort } from './support/ports.js';

const TOKEN = 'demo-dashboard-token-0123456789';

const EXAMPLE = resolve(fileURLToPath(import.meta.url), '../../../../examples/gateway/floodgate.yaml');

/** A demo process: its try-it text, a stop (SIGTERM) and when it exited, with its exit code. */
interface Demo {
  readonly text: string;
  readonly child: ReturnType<typeof spawn>;
  readonly exited: Promise<number | null>;
  stop(): Promise<void>;
}

/** Runs serve --demo-upstream on `config` until its try-it text is out; resolves with that text and a stop. */
async function demo(config: (upstreamPort: number) => string): Promise<Demo> {
  const dir = await mkdtemp(join(tmpdir(), 'floodgate-demo-'));
  const file = join(dir, 'floodgate.yaml');
  await writeFile(file, config(await closedPort()));
  const run = await serveDemo(file, ['--port', '0', '--admin-port', '0']);
  return {
    ...run,
    stop: async () => {
      await run.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** Starts `floodgate serve --config file --demo-upstream ...args` and waits for its try-it text. */
async function serveDemo(file: string, args: readonly string[]): Promise<Demo> {
  const child = spawn(
    process.execPath,
    [FLOODGATE_BIN, 'serve', '--config', file, '--demo-upstream', ...args, '--no-watch'],
    {
      env: { ...process.env, FG_DEMO_TOKEN: TOKEN },
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  let text = '';
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no dashboard line within 20 s:\n${text}`)), 20_000);
    child.stderr.on('data', (chunk: Buffer) => {
      text += chunk.toString();
      if (/^Dashboard: .*\n/m.test(text)) {
        clearTimeout(timer);
        resolve();
      }
    });
  });
  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited;
  };
  return { text, child, exited, stop };
}

const routes = (port: number): string =>
  `routes:\n  - name: api\n    upstream: http://127.0.0.1:${port}\n    rules:\n      - name: r\n        policy: { algorithm: fixedWindow, limit: 5, windowMs: 60000 }\n`;

describe('floodgate serve --demo-upstream', () => {
  it('names the dashboard with its address when the config has an admin token, and proxies to the demo', async () => {
    const run = await demo((port) => `admin: { host: 127.0.0.1, tokenEnv: FG_DEMO_TOKEN }\n${routes(port)}`);
    try {
      const dashboard =
        /^Dashboard: (http:\/\/127\.0\.0\.1:\d+\/dashboard) \(any user name, the admin token as the password\)\.$/m.exec(
          run.text,
        );
      assert.ok(dashboard, run.text);
      const page = await call(dashboard[1]!, { headers: { authorization: `Bearer ${TOKEN}` } });
      assert.equal(page.status, 200);
      const curl = /curl -i (http:\/\/\S+)/.exec(run.text)!;
      assert.equal((await call(curl[1]!)).status, 200, 'the demo upstream answers through the gateway');
    } finally {
      await run.stop();
    }
  });

  it('says the dashboard is off, and how to turn it on, without an admin token', async () => {
    const run = await demo((port) => routes(port));
    try {
      assert.match(run.text, /^Dashboard: off until the config has an admin token \(admin\.tokenEnv: VARIABLE/m);
    } finally {
      await run.stop();
    }
  });

  it('stops at once on Ctrl-C (SIGINT), skipping the 5 s drain, and its ports are free for a restart', async () => {
    // npm start's own config, on free ports: the gateway's, the admin's and the demo upstream's.
    const [port, adminPort, upstreamPort] = [await closedPort(), await closedPort(), await closedPort()];
    const example = await readFile(EXAMPLE, 'utf8');
    assert.match(example, /port: 8080\b/);
    const dir = await mkdtemp(join(tmpdir(), 'floodgate-demo-'));
    const file = join(dir, 'floodgate.yaml');
    await writeFile(
      file,
      example
        .replace(/port: 8080\b/, `port: ${port}`)
        .replace(/port: 9090\b/, `port: ${adminPort}`)
        .replaceAll('127.0.0.1:8081', `127.0.0.1:${upstreamPort}`),
    );
    try {
      for (const round of ['first run', 'restart at once']) {
        const run = await serveDemo(file, []);
        try {
          assert.match(run.text, new RegExp(`curl -i http://127\\.0\\.0\\.1:${port}/`), round);
          const fromMs = performance.now();
          run.child.kill('SIGINT');
          assert.equal(await run.exited, 0, `${round}: exits 0`);
          const tookMs = performance.now() - fromMs;
          assert.ok(tookMs < 2_500, `${round}: exited ${tookMs.toFixed(0)} ms after SIGINT, not after the 5 s drain`);
        } finally {
          await run.stop();
        }
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
