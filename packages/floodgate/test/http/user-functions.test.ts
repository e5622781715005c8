import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { byHeader, HttpGate, type HttpLimitOptions, type Logger } from '../../src/http/index.js';
import { OptionFunctionError } from '../../src/http/option-error.js';
import { fixedWindow, Limiter, ManualClock } from '../../src/index.js';
import { FakeView, type FakeRequest } from './support.js';
import { adapters, type Running } from './servers.js';

function recordingLogger(): Logger & { entries: [string, unknown][] } {
  const entries: [string, unknown][] = [];
  return { entries, warn: (message, detail) => void entries.push([message, detail]) };
}

const fresh = (): Limiter =>
  new Limiter({ policy: fixedWindow({ limit: 5, windowMs: 1000 }), clock: new ManualClock() });

/** Each faulty option: the options that carry it, the option its error names, and its code. */
const faults: {
  what: string;
  options: (l: Limiter) => Partial<HttpLimitOptions<FakeRequest>>;
  option: string;
  code: string;
}[] = [
  {
    what: 'an identity returning a number',
    options: (l) => ({ limiter: l, key: () => 42 as unknown as string }),
    option: 'key',
    code: 'INVALID_OPTION',
  },
  {
    what: 'an identity that throws',
    options: (l) => ({
      limiter: l,
      key: () => {
        throw new TypeError('no user');
      },
    }),
    option: 'key',
    code: 'INVALID_OPTION',
  },
  {
    what: 'a dimension identity returning an object',
    options: (l) => ({
      dimensions: [
        { name: 'ip', limiter: fresh() },
        { name: 'user', limiter: l, key: () => ({}) as unknown as string },
      ],
    }),
    option: 'dimensions[1].key',
    code: 'INVALID_OPTION',
  },
  { what: 'a cost of NaN', options: (l) => ({ limiter: l, cost: () => NaN }), option: 'cost', code: 'INVALID_COST' },
  { what: 'a cost of -1', options: (l) => ({ limiter: l, cost: () => -1 }), option: 'cost', code: 'INVALID_COST' },
  {
    what: 'a cost of Infinity',
    options: (l) => ({ limiter: l, cost: () => Infinity }),
    option: 'cost',
    code: 'INVALID_COST',
  },
  {
    what: 'a cost of "3"',
    options: (l) => ({ limiter: l, cost: () => '3' as unknown as number }),
    option: 'cost',
    code: 'INVALID_COST',
  },
  {
    what: 'a cost function that throws',
    options: (l) => ({
      limiter: l,
      cost: () => {
        throw new Error('bad body');
      },
    }),
    option: 'cost',
    code: 'INVALID_OPTION',
  },
  {
    what: 'a limiter chooser returning a policy',
    options: () => ({ limiter: () => fixedWindow({ limit: 1, windowMs: 1 }) as unknown as Limiter }),
    option: 'limiter',
    code: 'INVALID_OPTION',
  },
  {
    what: 'a dimension chooser that throws',
    options: () => ({
      dimensions: [
        {
          name: 'plan',
          limiter: () => {
            throw new Error('no plan');
          },
        },
      ],
    }),
    option: 'dimensions[0].limiter',
    code: 'INVALID_OPTION',
  },
  {
    what: 'a skip returning "yes"',
    options: (l) => ({ limiter: l, skip: () => 'yes' as unknown as boolean }),
    option: 'skip',
    code: 'INVALID_OPTION',
  },
  {
    what: 'a skip that throws',
    options: (l) => ({
      limiter: l,
      skip: () => {
        throw new Error('boom');
      },
    }),
    option: 'skip',
    code: 'INVALID_OPTION',
  },
];

describe('user-supplied functions that fail: a typed error naming the option, logged once, a 500 problem', () => {
  for (const f of faults) {
    it(`${f.what}: ${f.code} on ${f.option}`, async () => {
      const logger = recordingLogger();
      const limiter = fresh();
      const gate = new HttpGate<FakeRequest>({ ...f.options(limiter), logger } as HttpLimitOptions<FakeRequest>);
      for (let i = 0; i < 3; i++) {
        const v = await gate.check(new FakeView(gate.clientIp, { route: '/orders/:id' }));
        assert.equal(v.statusCode, 500);
        assert.equal(v.allowed, false);
        assert.deepEqual(JSON.parse(v.body!), {
          type: 'about:blank',
          title: 'Internal Server Error',
          status: 500,
          detail: 'the rate limit for this request could not be applied',
        });
        assert.ok(v.headers.some(([n, value]) => n === 'content-type' && value === 'application/problem+json'));
      }
      assert.equal(logger.entries.length, 1, 'logged once');
      const error = logger.entries[0]![1];
      assert.ok(error instanceof OptionFunctionError, String(error));
      assert.equal(error.code, f.code);
      assert.equal(error.option, f.option);
      assert.equal(error.route, '/orders/:id');
      assert.match(error.message, new RegExp(`the ${f.option.replace(/[[\]]/g, '\\$&')} option`));
      assert.match(error.message, /route "\/orders\/:id"/);
      assert.doesNotMatch(error.message, /Buffer/);
      assert.equal(limiter.peekSync('default/ip:127.0.0.1', { cost: 0 }).remaining, 5, 'nothing charged');
    });
  }

  it('a throwing function keeps what it threw as the cause', async () => {
    const logger = recordingLogger();
    const thrown = new TypeError('no user');
    const gate = new HttpGate<FakeRequest>({
      limiter: fresh(),
      key: () => {
        throw thrown;
      },
      logger,
    });
    await gate.check(new FakeView(gate.clientIp, {}));
    assert.equal((logger.entries[0]![1] as Error).cause, thrown);
  });

  it('a second dimension failing gives back what the first one took', async () => {
    const ip = fresh();
    const gate = new HttpGate<FakeRequest>({
      dimensions: [
        { name: 'ip', limiter: ip },
        { name: 'user', limiter: fresh(), key: () => 7 as unknown as string },
      ],
      logger: recordingLogger(),
    });
    assert.equal((await gate.check(new FakeView(gate.clientIp, {}))).statusCode, 500);
    assert.equal(ip.peekSync('ip/ip:127.0.0.1', { cost: 0 }).remaining, 5);
  });

  it('a cost of 0, an identity of undefined and a chooser of undefined are fine', async () => {
    const l = fresh();
    const gate = new HttpGate<FakeRequest>({
      dimensions: [
        { name: 'a', limiter: l },
        { name: 'b', limiter: () => undefined },
        { name: 'c', limiter: fresh(), key: byHeader('x-none') },
      ],
      cost: () => 0,
    });
    assert.equal((await gate.check(new FakeView(gate.clientIp, {}))).allowed, true);
  });
});

describe('on every adapter, a failing option answers a problem, never the framework page', () => {
  const logs: Record<string, unknown[]> = {};
  const running: Record<string, Running> = {};
  before(async () => {
    for (const name of Object.keys(adapters)) {
      logs[name] = [];
      const options: HttpLimitOptions<unknown> = {
        limiter: fresh(),
        key: (req) => (req.route.startsWith('/items/') ? (Number(req.route.slice(7)) as unknown as string) : 'fine'),
        cost: (req) => (req.header('x-cost') === undefined ? 1 : (req.header('x-cost') as unknown as number)),
        logger: { warn: (_m, detail) => void logs[name]!.push(detail) },
      };
      running[name] = await adapters[name]!(options);
    }
  });
  after(() => Promise.all(Object.values(running).map((r) => r.close())));

  for (const name of Object.keys(adapters)) {
    it(name, async () => {
      const url = running[name]!.url;
      const byNumber = await fetch(`${url}/items/12`, { signal: AbortSignal.timeout(5000) });
      assert.equal(byNumber.status, 500);
      assert.match(byNumber.headers.get('content-type')!, /^application\/problem\+json/);
      assert.equal(((await byNumber.json()) as { type: string }).type, 'about:blank');
      const byString = await fetch(`${url}/ok`, { headers: { 'x-cost': '3' }, signal: AbortSignal.timeout(5000) });
      assert.equal(byString.status, 500);
      assert.match(byString.headers.get('content-type')!, /^application\/problem\+json/);
      await byString.arrayBuffer();
      const fine = await fetch(`${url}/ok`, { signal: AbortSignal.timeout(5000) });
      assert.equal(fine.status, 200);
      await fine.arrayBuffer();
      const codes = logs[name]!.map((e) => [(e as OptionFunctionError).code, (e as OptionFunctionError).option]);
      assert.deepEqual(codes, [
        ['INVALID_OPTION', 'key'],
        ['INVALID_COST', 'cost'],
      ]);
    });
  }
});
