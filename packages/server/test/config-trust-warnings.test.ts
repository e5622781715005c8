/**
 * Trust settings that are easy to miss, against `floodgate check` and gateway processes: a JWT
 * key without a secret is refused unless `verify: false` says so (then warned of, at check and at
 * start); a priority header believed from any client is warned of, and `headerFrom:
 * trusted-proxies` believes it only from a trusted proxy; wait-line settings that do nothing while
 * maxQueue is 0 are warned of, each with its fix.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { floodgate } from './support/cli.js';
import { startGateway, type GatewayProcess } from './support/gateway-process.js';
import { call } from './support/http.js';
import { startSlotUpstream, type SlotUpstream } from './support/slot-upstream.js';

const UPSTREAM = 'http://127.0.0.1:9'; // never reached by the check

function route(extra: string, upstream = UPSTREAM): string {
  return `routes:\n  - name: api\n    match: { path: /api/* }\n    upstream: ${upstream}\n${extra}`;
}

const JWT_NO_SECRET = route(`    rules:
      - name: per-user
        policy: { algorithm: fixedWindow, limit: 5, windowMs: 60000 }
        key: { type: jwt, claim: sub }
`);
const JWT_UNVERIFIED = route(`    rules:
      - name: per-user
        policy: { algorithm: fixedWindow, limit: 5, windowMs: 60000 }
        key: { type: jwt, claim: sub, verify: false }
`);
const IDLE_WAITS = `${route(`    adaptive: { maxWaitMs: 200 }
`)}  - name: fifo
    match: { path: /fifo/* }
    upstream: ${UPSTREAM}
    concurrency: { limit: 4, order: fifo, codel: { targetMs: 5 } }
`;

/** tiered is a route of two slots whose batch tier may fill one (reserveRatio 0.5). */
function tiered(upstream: string, headerFrom: string | undefined, trustProxy: string): string {
  const from = headerFrom === undefined ? '' : `, headerFrom: ${headerFrom}`;
  return `trustProxy: ${trustProxy}
${route(
  `    concurrency: { limit: 2 }
    priority: { tiers: [critical, batch], default: batch, reserveRatio: 0.5${from} }
`,
  upstream,
)}`;
}

describe('trust settings that are easy to miss', () => {
  let dir: string;
  const gateways: GatewayProcess[] = [];
  let slots: SlotUpstream;
  const write = async (name: string, yaml: string): Promise<string> => {
    const file = join(dir, name);
    await writeFile(file, yaml);
    return file;
  };

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'floodgate-trust-'));
    slots = await startSlotUpstream({ slots: 4, serviceMs: 1 });
  });
  after(async () => {
    await Promise.all(gateways.map((g) => g.stop()));
    await slots?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('refuses a JWT key without a secret, naming the risk and the fix, at check and at start', async () => {
    const file = await write('jwt-no-secret.yaml', JWT_NO_SECRET);
    const checked = await floodgate('check', file);
    assert.equal(checked.code, 1, checked.stdout);
    assert.match(checked.stderr, /routes\[0\]\.rules\[0\]\.key: a jwt key without secret or secretEnv/);
    assert.match(checked.stderr, /fix: set secretEnv .* or verify: false when a proxy in front verifies every token/);
    const serve = await floodgate('serve', '--config', file, '--port', '0', '--admin-port', '0');
    assert.notEqual(serve.code, 0, 'the gateway does not start on it');
    assert.match(serve.stderr + serve.stdout, /a jwt key without secret or secretEnv/);
  });

  it('takes verify: false as the operator’s word, and warns of it at check and at start', async () => {
    const file = await write('jwt-unverified.yaml', JWT_UNVERIFIED);
    const checked = await floodgate('check', file);
    assert.equal(checked.code, 0, checked.stderr);
    assert.match(checked.stdout, /valid \(1 route, 1 rule, memory store\)/);
    assert.match(checked.stdout, /warning: .*routes\[0\]\.rules\[0\]\.key\.verify: .*without verifying the token/);
    const gw = await startGateway(JWT_UNVERIFIED);
    gateways.push(gw);
    const warned = await gw.waitForLog(
      'config warning: the rule "per-user" of route "api" reads the JWT claim sub without verifying the token: a client reaching the gateway directly can mint one for any subject and spend that client\'s budget',
    );
    assert.equal(warned.path, 'routes[0].rules[0].key.verify');
    assert.match(String(warned.fix), /secretEnv/);
  });

  it('warns when any client may claim the top priority tier, at check and at start', async () => {
    const yaml = tiered(slots.origin, undefined, 'false');
    const checked = await floodgate('check', await write('priority.yaml', yaml));
    assert.equal(checked.code, 0, checked.stderr);
    assert.match(
      checked.stdout,
      /warning: .*routes\[0\]\.priority: any client can claim the tier "critical" by sending x-priority: critical/,
    );
    assert.match(
      checked.stdout,
      /fix: set priority\.headerFrom: anyone once an edge in front sets or strips the header/,
    );
    const gw = await startGateway(yaml);
    gateways.push(gw);
    await gw.waitForLog('ready');
    assert.ok(
      gw.logs.some((l) => String(l.msg).startsWith('config warning: any client can claim the tier "critical"')),
    );
    const stated = await floodgate('check', await write('anyone.yaml', tiered(slots.origin, 'anyone', 'false')));
    assert.doesNotMatch(stated.stdout, /warning/, 'headerFrom: anyone is the operator saying an edge sets it');
  });

  it('with headerFrom: trusted-proxies, believes the header only from a trusted proxy', async () => {
    const untrusting = await startGateway(tiered(slots.origin, 'trusted-proxies', '[192.0.2.1]'));
    const trusting = await startGateway(tiered(slots.origin, 'trusted-proxies', '["127.0.0.1"]'));
    gateways.push(untrusting, trusting);
    await Promise.all([untrusting.waitForLog('ready'), trusting.waitForLog('ready')]);
    await slots.control({ hang: true });
    try {
      const critical = { headers: { 'x-priority': 'critical' } };
      for (const gw of [untrusting, trusting]) void call(gw.url('/api/held'));
      for (let i = 0; i < 200 && (await slots.stats()).open < 2; i++) await new Promise((r) => setTimeout(r, 20));
      assert.equal((await slots.stats()).open, 2, 'each gateway holds one batch request: batch’s share is full');
      const claimed = await call(untrusting.url('/api/claim'), critical);
      assert.equal(claimed.status, 503, 'from an untrusted peer the header is ignored: the default tier, shed');
      const believed = call(trusting.url('/api/claim'), critical);
      for (let i = 0; i < 200 && (await slots.stats()).open < 3; i++) await new Promise((r) => setTimeout(r, 20));
      assert.equal(
        (await slots.stats()).open,
        3,
        'from a trusted proxy the header is believed: critical is let through',
      );
      await slots.control({ hang: false });
      assert.equal((await believed).status, 200);
    } finally {
      await slots.control({ hang: false });
    }
  });

  it('warns of wait-line settings that do nothing while maxQueue is 0, with the fix', async () => {
    const checked = await floodgate('check', await write('idle.yaml', IDLE_WAITS));
    assert.equal(checked.code, 0, checked.stderr);
    assert.match(checked.stdout, /valid \(2 routes, 0 rules, memory store\)/);
    for (const [path, setting, kind] of [
      ['routes[0].adaptive.maxWaitMs', 'maxWaitMs', 'adaptive'],
      ['routes[1].concurrency.order', 'order', 'concurrency'],
      ['routes[1].concurrency.codel', 'codel', 'concurrency'],
    ] as const)
      assert.match(
        checked.stdout,
        new RegExp(
          `warning: \\S+:\\d+:\\d+ ${path.replace(/[.[\]]/g, '\\$&')}: ${kind}\\.${setting} is set but maxQueue is 0: no request ever waits for a slot, so it does nothing \\(fix: set ${kind}\\.maxQueue`,
        ),
      );
    const gw = await startGateway(IDLE_WAITS);
    gateways.push(gw);
    await gw.waitForLog('ready');
    assert.equal(
      gw.logs.filter((l) => String(l.msg).startsWith('config warning:') && String(l.msg).includes('maxQueue is 0'))
        .length,
      3,
    );
  });
});

describe('a catch-all route beside a host route to the same application', () => {
  it('is warned of by floodgate check, with the fix', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'floodgate-catch-all-'));
    try {
      const file = join(dir, 'hosts.yaml');
      await writeFile(
        file,
        `routes:
  - name: strict
    match: { host: api.example.test }
    upstream: http://127.0.0.1:3000
    rules:
      - name: per-ip
        policy: { algorithm: fixedWindow, limit: 5, windowMs: 60000 }
  - name: everything-else
    upstream: http://127.0.0.1:3000/
`,
      );
      const checked = await floodgate('check', file);
      assert.equal(checked.code, 0, checked.stderr);
      assert.match(
        checked.stdout,
        /warning: \S+ routes\[1\]\.match: the route "everything-else" matches any Host and forwards to http:\/\/127\.0\.0\.1:3000, as the route "strict" does for host api\.example\.test/,
      );
      assert.match(checked.stdout, /fix: give "everything-else" a match\.host too/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('identity values hashed without a secret', () => {
  it('is warned of by floodgate check, with the fix, and not once a secret is named', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'floodgate-unkeyed-'));
    try {
      const rules = `routes:
  - name: api
    upstream: http://127.0.0.1:3000
    rules:
      - name: per-key
        policy: { algorithm: fixedWindow, limit: 5, windowMs: 60000 }
        key: { type: header, name: x-api-key }
`;
      const unkeyed = join(dir, 'unkeyed.yaml');
      await writeFile(unkeyed, rules);
      const checked = await floodgate('check', unkeyed);
      assert.equal(checked.code, 0, checked.stderr);
      assert.match(checked.stdout, /warning: \S+ keys: identity values .* are hashed in store keys without a secret/);
      assert.match(checked.stdout, /fix: set keys\.secretEnv/);
      const keyed = join(dir, 'keyed.yaml');
      await writeFile(keyed, `keys: { secretEnv: FLOODGATE_KEYS_SECRET }\n${rules}`);
      const named = await floodgate('check', keyed);
      assert.doesNotMatch(named.stdout + named.stderr, /without a secret/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
