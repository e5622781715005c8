import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { afterEach, describe, it } from 'node:test';
import express from 'express';
import { floodgateExpress } from '../../src/http/adapters/express.js';
import { trustSourceOf } from '../../src/http/adapters/express-trust.js';
import type { HttpLimitOptions } from '../../src/http/index.js';
import { FloodgateError, fixedWindow, Limiter, ManualClock } from '../../src/index.js';
import { close, listen, memoryLogger } from './support.js';

const onePerHour = (): Limiter =>
  new Limiter({ policy: fixedWindow({ limit: 1, windowMs: 3_600_000 }), clock: new ManualClock(0) });

describe("Express's trust proxy setting", () => {
  let stop: (() => Promise<void>) | undefined;
  afterEach(async () => {
    await stop?.();
    stop = undefined;
  });

  /** Starts an app with `trust proxy` set to `setting` (undefined: left alone); errors answer 500 with their code. */
  async function start(setting: unknown, options: HttpLimitOptions<express.Request>): Promise<string> {
    const app = express();
    if (setting !== undefined) app.set('trust proxy', setting);
    app.use(floodgateExpress(options));
    app.get('/ok', (req, res) => void res.send(`ip ${req.ip}`));
    app.use(
      (err: FloodgateError, _req: express.Request, res: express.Response, _next: express.NextFunction) =>
        void res.status(500).send(`${err.code}: ${err.message}`),
    );
    const server = createServer(app);
    const url = await listen(server);
    stop = () => close(server);
    return url;
  }

  const from = (url: string, client: string): Promise<Response> =>
    fetch(`${url}/ok`, { headers: { 'x-forwarded-for': client } });

  it('three clients behind a proxy get three buckets when the app trusts the proxy', async () => {
    const url = await start(1, { limiter: onePerHour() });
    for (const client of ['192.0.2.1', '192.0.2.2', '::ffff:192.0.2.3'])
      assert.equal((await from(url, client)).status, 200, client);
    for (const client of ['192.0.2.1', '192.0.2.2', '192.0.2.3'])
      assert.equal((await from(url, client)).status, 429, client);
  });

  it("with a list setting ('loopback') the same, and the key is Express's req.ip", async () => {
    const seen: string[] = [];
    const url = await start('loopback', { limiter: onePerHour(), key: (req) => (seen.push(req.ip), `ip:${req.ip}`) });
    assert.equal((await from(url, '2001:db8::1')).status, 200);
    assert.equal((await from(url, '192.0.2.9')).status, 200);
    assert.deepEqual(seen, ['2001:db8::1', '192.0.2.9']);
  });

  it('without the setting or trustProxy, every client behind the proxy shares its bucket (and a warning says why)', async () => {
    const logger = memoryLogger();
    const url = await start(undefined, { limiter: onePerHour(), logger });
    assert.equal((await from(url, '192.0.2.1')).status, 200);
    assert.equal((await from(url, '192.0.2.2')).status, 429);
    assert.match(logger.messages.join('\n'), /x-forwarded-for/);
  });

  it("floodgate's trustProxy alone still works when the app trusts nothing", async () => {
    const url = await start(undefined, { limiter: onePerHour(), trustProxy: 1 });
    assert.equal((await from(url, '192.0.2.1')).status, 200);
    assert.equal((await from(url, '192.0.2.2')).status, 200);
    assert.equal((await from(url, '192.0.2.1')).status, 429);
  });

  it('both set to the same value: agreed, three buckets', async () => {
    const url = await start(['127.0.0.1/32'], { limiter: onePerHour(), trustProxy: ['127.0.0.1/32'] });
    assert.equal((await from(url, '192.0.2.1')).status, 200);
    assert.equal((await from(url, '192.0.2.2')).status, 200);
  });

  it('refuses loudly when they disagree: every request fails with INVALID_OPTION naming both, logged once', async () => {
    const logger = memoryLogger();
    const url = await start(2, { limiter: onePerHour(), trustProxy: 1, logger });
    for (let i = 0; i < 2; i++) {
      const res = await from(url, '192.0.2.1');
      assert.equal(res.status, 500);
      const text = await res.text();
      assert.match(text, /^INVALID_OPTION: trustProxy is 1 but the Express app's "trust proxy" setting is 2/);
    }
    assert.equal(logger.messages.filter((m) => m.includes('disagree')).length, 1);
  });
});

describe('trustSourceOf', () => {
  it('decides who finds the address from the two settings', () => {
    assert.equal(trustSourceOf(false, {}), 'floodgate');
    assert.equal(trustSourceOf(undefined, { trustProxy: 1 }), 'floodgate');
    assert.equal(trustSourceOf(true, {}), 'express');
    assert.equal(trustSourceOf('10.0.0.0/8, 127.0.0.1', {}), 'express');
    assert.equal(trustSourceOf('127.0.0.1,10.0.0.0/8', { trustProxy: ['10.0.0.0/8', '127.0.0.1'] }), 'floodgate');
    assert.equal(trustSourceOf(3, { trustProxy: 3 }), 'floodgate');
    const refused = trustSourceOf(true, { trustProxy: 1 });
    assert.ok(refused instanceof FloodgateError);
    assert.equal(refused.code, 'INVALID_OPTION');
    assert.ok(trustSourceOf(() => true, { trustProxy: false }) instanceof FloodgateError);
  });
});
