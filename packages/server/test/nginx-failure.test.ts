/**
 * What nginx in front of floodgate does when floodgate cannot answer, for each failure mode of
 * examples/nginx/nginx.conf (`set $floodgate_on_failure closed|open;`): two nginx processes, one
 * of each, ask one real decision service process, which the test kills, hangs (SIGSTOP), resumes
 * and restarts on its port. Closed answers 503 problem+json and forwards nothing; open forwards
 * the request unlimited; once floodgate answers again, both decide by it again.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { call, type Reply } from './support/http.js';
import { EXAMPLE_DIR, NGINX_MISSING, exampleConf, startNginx, type RunningNginx } from './support/nginx.js';
import { closedPort } from './support/ports.js';
import { startUpstream, type TestUpstream } from './support/upstream.js';
import { startServiceProcess, type ServiceProcess } from './ratelimit/processes.js';

const CONFIG = join(EXAMPLE_DIR, 'ratelimit.yaml');

function assertFailedClosed(reply: Reply): void {
  assert.equal(reply.status, 503);
  assert.equal(reply.headers['content-type'], 'application/problem+json');
  assert.equal(reply.headers['retry-after'], '1');
  assert.equal(reply.headers['cache-control'], 'no-store');
  const problem = JSON.parse(reply.body) as { type: string; status: number };
  assert.equal(problem.type, 'https://iana.org/assignments/http-problem-types#temporary-reduced-capacity');
  assert.equal(problem.status, 503);
  assert.equal(reply.headers.ratelimit, undefined);
}

function assertFailedOpen(reply: Reply): void {
  assert.equal(reply.status, 200);
  assert.equal(reply.headers.ratelimit, undefined, 'nothing decided it, so no RateLimit field');
}

function assertDecided(reply: Reply, remaining: number): void {
  assert.equal(reply.status, 200);
  assert.match(String(reply.headers.ratelimit), new RegExp(`^"per-key";r=${remaining};`));
}

describe('nginx when floodgate cannot answer', { skip: NGINX_MISSING }, () => {
  let upstream: TestUpstream;
  let floodgate: ServiceProcess;
  let floodgatePort: number;
  let closed: RunningNginx;
  let open: RunningNginx;
  const ask = (nginx: RunningNginx, key: string): Promise<Reply> =>
    call(`http://127.0.0.1:${nginx.port}/api/items`, { headers: { 'x-api-key': key } });

  before(async () => {
    upstream = await startUpstream();
    floodgate = await startServiceProcess(['--config', CONFIG]);
    floodgatePort = floodgate.httpPort;
    const ports = { floodgate: floodgatePort, app: upstream.port };
    const closedAt = await closedPort();
    closed = await startNginx(exampleConf({ ...ports, nginx: closedAt }, { onFailure: 'closed' }), closedAt);
    const openAt = await closedPort();
    open = await startNginx(exampleConf({ ...ports, nginx: openAt }, { onFailure: 'open' }), openAt);
  });
  after(async () => {
    if (floodgate !== undefined)
      try {
        process.kill(floodgate.pid, 'SIGCONT');
      } catch {
        // It has exited already.
      }
    await closed?.stop();
    await open?.stop();
    await floodgate?.stop();
    await upstream?.close();
  });

  it('decides by floodgate while it answers, whichever the failure mode', async () => {
    assertDecided(await ask(closed, 'up'), 99);
    assertDecided(await ask(open, 'up'), 98);
  });

  it('floodgate down: closed answers 503 and forwards nothing, open forwards unlimited', async () => {
    await floodgate.stop();
    const before = upstream.received.length;
    for (let i = 0; i < 3; i++) assertFailedClosed(await ask(closed, 'down'));
    assert.equal(upstream.received.length, before);
    for (let i = 0; i < 3; i++) assertFailedOpen(await ask(open, 'down'));
    assert.equal(upstream.received.length, before + 3);
    assert.match(closed.stderr(), /auth request unexpected status: 502/);
  });

  it('floodgate back on its port: both decide by it again', async () => {
    floodgate = await startServiceProcess(['--config', CONFIG, '--http-port', String(floodgatePort)]);
    assert.equal(floodgate.httpPort, floodgatePort);
    assertDecided(await ask(closed, 'back'), 99);
    assertDecided(await ask(open, 'back'), 98);
  });

  it('floodgate hung (SIGSTOP): each mode answers by its failure mode after proxy_read_timeout, then decides again on SIGCONT', async () => {
    process.kill(floodgate.pid, 'SIGSTOP');
    const before = upstream.received.length;
    assertFailedClosed(await ask(closed, 'hung'));
    assert.equal(upstream.received.length, before);
    assertFailedOpen(await ask(open, 'hung'));
    assert.equal(upstream.received.length, before + 1);
    assert.match(closed.stderr(), /upstream timed out/);
    process.kill(floodgate.pid, 'SIGCONT');
    assertDecided(await ask(closed, 'resumed'), 99);
    assertDecided(await ask(open, 'resumed'), 98);
  });
});
