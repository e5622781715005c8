// floodgate serve --demo-upstream (what npm start runs): the try-it text says where the dashboard is,
// or how to turn it on, and the demo upstream answers through the gateway.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { FLOODGATE_BIN } from './support/cli.js';
import { call } from './support/http.js';
import { closedPort } from './support/ports.js';

const TOKEN = 'demo-dashboard-token-0123456789';

/** Runs serve --demo-upstream on `config` until its try-it text is out; resolves with that text and a stop. */
async function demo(config: (upstreamPort: number) => string): Promise<{ text: string; stop: () => Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), 'floodgate-demo-'));
  const file = join(dir, 'floodgate.yaml');
  await writeFile(file, config(await closedPort()));
  const child = spawn(
    process.execPath,
    [FLOODGATE_BIN, 'serve', '--config', file, '--demo-upstream', '--port', '0', '--admin-port', '0', '--no-watch'],
    { env: { ...process.env, FG_DEMO_TOKEN: TOKEN }, stdio: ['ignore', 'ignore', 'pipe'] },
  );
  const exited = new Promise((resolve) => child.once('exit', resolve));
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
    child.kill('SIGTERM');
    await exited;
    await rm(dir, { recursive: true, force: true });
  };
  return { text, stop };
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
});
