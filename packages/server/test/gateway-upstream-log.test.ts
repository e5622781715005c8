/**
 * A dead upstream in the log, against a gateway process: 40 requests to an upstream on a closed
 * port write one `upstream failed` line, not forty; once an upstream listens on that port, the
 * next request writes one `upstream back` line counting the failures; a second outage is logged
 * afresh only after the quiet period (flapping is thinned too).
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { startGateway, type GatewayProcess } from './support/gateway-process.js';
import { call } from './support/http.js';
import { closedPort } from './support/ports.js';

describe('a dead upstream in the log', () => {
  let gw: GatewayProcess;
  let port: number;
  let upstream: Server | undefined;

  before(async () => {
    port = await closedPort();
    gw = await startGateway(`
routes:
  - name: api
    upstream: http://127.0.0.1:${port}
`);
    await gw.waitForLog('ready');
  });
  after(async () => {
    await gw?.stop();
    upstream?.closeAllConnections();
    await new Promise<void>((resolve) => (upstream === undefined ? resolve() : upstream.close(() => resolve())));
  });

  const lines = (msg: string): Array<Record<string, unknown>> => gw.logs.filter((l) => l.msg === msg);

  it('writes one line when it goes away and one, with the count, when it is back', async () => {
    for (let i = 0; i < 40; i++) assert.equal((await call(gw.url(`/x/${i}`))).status, 502);
    assert.equal(lines('upstream failed').length, 1, 'one line for the outage, not one per request');
    const first = lines('upstream failed')[0]!;
    assert.equal(first.upstream, `http://127.0.0.1:${port}`);
    assert.equal(first.route, 'api');
    assert.match(String(first.error), /ECONNREFUSED/);

    upstream = createServer((_req, res) => res.end('ok'));
    await new Promise<void>((resolve) => upstream!.listen(port, '127.0.0.1', resolve));
    assert.equal((await call(gw.url('/again'))).status, 200);
    const back = await gw.waitForLog('upstream back: answering again');
    assert.equal(back.failures, 40);
    assert.equal(back.upstream, `http://127.0.0.1:${port}`);

    // Gone again within the quiet period: counted, its first line thinned away, and its back line with it.
    upstream.closeAllConnections();
    await new Promise<void>((resolve) => upstream!.close(() => resolve()));
    upstream = undefined;
    for (let i = 0; i < 5; i++) assert.equal((await call(gw.url(`/y/${i}`))).status, 502);
    assert.equal(lines('upstream failed').length, 1, 'a flapping upstream is thinned too');
  });
});
