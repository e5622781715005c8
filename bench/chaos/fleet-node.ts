/**
 * One process of the chaos bench's fleet (bench/chaos/fleet.ts), in its own Node process: every
 * fleet side, each with its own ioredis client (`retryStrategy: () => 50`) and its own store or
 * limiter, offering `hotPerSecond` decisions a second on the one hot key between two epoch times,
 * and a trickle on a few other keys from start to stop (so the stores hear Redis answer again, and
 * beat their census, whatever the hot key does). Writes `ready` once connected; the parent then
 * writes `hot {"fromMs":…,"untilMs":…}` (epoch ms) and later `stop`, and it prints one JSON line of
 * {@link NodeRecords}.
 *
 *   node --conditions=floodgate-source --import tsx bench/chaos/fleet-node.ts '{"port":1234,"hotPerSecond":200}'
 */
import { createInterface } from 'node:readline';
import { Redis, type RedisOptions } from 'ioredis';
import { RLWrapperTimeouts, RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import { Limiter, fixedWindow, tokenBucket, type Decision } from 'floodgate';
import { RedisStore, ioredisAdapter, type RedisStoreOptions } from 'floodgate/redis';
import {
  BUCKET,
  HOT_KEY,
  WINDOW,
  prefixOf,
  type FleetPolicy,
  type FleetSide,
  type HotSpan,
  type NodeArgs,
  type NodeRecords,
  type StreamRecords,
} from './fleet-plan.js';

/** An answer: admitted or not, and whether Redis gave it. */
interface Answer {
  readonly allowed: boolean;
  readonly reason: string;
  readonly fromRedis: boolean;
  /** For a local fallback's admission: the limit it showed (remaining + 1), else 0. */
  readonly localLimit: number;
}

type Decide = (key: string) => Promise<Answer>;

const TICK_MS = 5;
const TRICKLE_PER_SECOND = 10;
const TRICKLE_KEYS = 5;
const SETTLE_MS = 3000;
const CLIENT: RedisOptions = { retryStrategy: () => 50 };
/** The wall clock, as the policies' windows, floodgate's fallback and Redis's TIME all read it. */
const epochMs = (): number => Date.now();

function client(port: number, options: RedisOptions = {}): Redis {
  const redis = new Redis({ host: '127.0.0.1', port, ...CLIENT, ...options });
  redis.on('error', () => {}); // the limiters answer meanwhile
  return redis;
}

function floodgateDecides(port: number, side: FleetSide): Record<FleetPolicy, Decide> & { client: Redis } {
  const redis = client(port);
  const options: Partial<RedisStoreOptions> =
    side === 'fail-open' ? { onError: 'fail-open' } : side === 'no-write-back' ? { writeBack: false } : {};
  const store = new RedisStore({ adapter: ioredisAdapter(redis), prefix: prefixOf(side), ...options });
  const answer = (d: Decision): Answer => ({
    allowed: d.allowed,
    reason: d.reason,
    fromRedis: d.reason === 'ok' || d.reason === 'limit',
    localLimit: d.reason === 'fallback' && d.allowed ? d.remaining + 1 : 0,
  });
  const decide =
    (limiter: Limiter): Decide =>
    (key) =>
      limiter.consume(key).then(answer);
  return {
    client: redis,
    'token-bucket': decide(new Limiter({ policy: tokenBucket(BUCKET), store })),
    'fixed-window': decide(new Limiter({ policy: fixedWindow(WINDOW), store })),
  };
}

/**
 * rate-limiter-flexible as its documentation sets it up against a failing Redis: RateLimiterRedis
 * with an insurance RateLimiterMemory of the full points (it has no share, and no write-back),
 * inside RLWrapperTimeouts at 100 ms (without it, a hung Redis holds every call until it resumes),
 * on a client with `enableOfflineQueue: false`. Its fixed window only: it has no token bucket.
 */
function rlfDecides(port: number): { client: Redis; decide: Decide } {
  const redis = client(port, { enableOfflineQueue: false });
  const duration = WINDOW.windowMs / 1000;
  const insurance = new RateLimiterMemory({ points: WINDOW.limit, duration });
  const insured = new WeakSet<object>();
  const consume = insurance.consume.bind(insurance);
  const mark = <T>(res: T): T => {
    if (typeof res === 'object' && res !== null) insured.add(res);
    return res;
  };
  insurance.consume = (key, points, options) =>
    consume(key, points, options).then(mark, (res: unknown) => Promise.reject(mark(res)));
  const limiter = new RLWrapperTimeouts({
    limiter: new RateLimiterRedis({
      storeClient: redis,
      keyPrefix: prefixOf('rlf-insured'),
      points: WINDOW.limit,
      duration,
      insuranceLimiter: insurance,
    }),
    timeoutMs: 100,
  });
  const answer = (allowed: boolean, res: object): Answer => ({
    allowed,
    reason: insured.has(res) ? 'insurance' : 'redis',
    fromRedis: !insured.has(res),
    localLimit: 0,
  });
  return {
    client: redis,
    decide: (key) =>
      limiter.consume(key).then(
        (res) => answer(true, res),
        (e: unknown) => {
          if (e instanceof RateLimiterRes) return answer(false, e);
          throw e;
        },
      ),
  };
}

/** A stream of decisions on one key pattern at a fixed rate between two epoch times. */
interface Stream {
  readonly decide: Decide;
  fromMs: number;
  untilMs: number;
  readonly perSecond: number;
  issued: number;
  readonly issue: (stream: Stream) => void;
}

function hotStream(args: NodeArgs, records: StreamRecords, decide: Decide, pending: Set<StreamRecords>): Stream {
  let out = 0;
  const issue = (): void => {
    records.asked++;
    out++;
    pending.add(records);
    decide(HOT_KEY)
      .then(
        (a) => {
          const atMs = epochMs();
          const second = (records.reasonsBySecond[Math.floor(atMs / 1000)] ??= {});
          second[a.reason] = (second[a.reason] ?? 0) + 1;
          if (a.allowed) {
            records.admittedAtMs.push(Math.round(atMs * 10) / 10);
            records.admittedBy.push(a.fromRedis ? 0 : 1);
          } else records.refused++;
          if (!a.fromRedis) records.localLimit = Math.max(records.localLimit, a.localLimit);
        },
        () => records.errors++,
      )
      .finally(() => {
        if (--out === 0) pending.delete(records);
        records.unsettled = out;
      });
  };
  return { decide, fromMs: Infinity, untilMs: Infinity, perSecond: args.hotPerSecond, issued: 0, issue };
}

function trickleStream(decide: Decide, fromMs: number): Stream {
  return {
    decide,
    fromMs,
    untilMs: Infinity,
    perSecond: TRICKLE_PER_SECOND,
    issued: 0,
    issue: (s) => void decide(`k${s.issued % TRICKLE_KEYS}`).catch(() => {}),
  };
}

/** Issues every decision due by now on every stream (the rate holds when a tick is late). */
function openLoop(streams: readonly Stream[]): NodeJS.Timeout {
  return setInterval(() => {
    const now = epochMs();
    for (const s of streams) {
      if (now < s.fromMs) continue;
      const due = Math.floor(((Math.min(now, s.untilMs) - s.fromMs) * s.perSecond) / 1000);
      while (s.issued < due) {
        s.issue(s);
        s.issued++;
      }
    }
  }, TICK_MS);
}

async function main(): Promise<void> {
  const args = JSON.parse(process.argv[2] ?? '{}') as NodeArgs;
  const sides = (['floodgate', 'fail-open', 'no-write-back'] as const).map((side) => ({
    side,
    ...floodgateDecides(args.port, side),
  }));
  const rlf = rlfDecides(args.port);
  const clients = [...sides.map((s) => s.client), rlf.client];
  await Promise.all(
    clients.map((c) => (c.status === 'ready' ? undefined : new Promise((resolve) => c.once('ready', resolve)))),
  );
  const records: StreamRecords[] = [];
  const decides: Array<[FleetSide, FleetPolicy, Decide]> = [
    ...sides.flatMap((s) =>
      (['token-bucket', 'fixed-window'] as const).map((p): [FleetSide, FleetPolicy, Decide] => [s.side, p, s[p]]),
    ),
    ['rlf-insured', 'fixed-window', rlf.decide],
  ];
  const pending = new Set<StreamRecords>();
  const hot: Stream[] = [];
  const trickle: Stream[] = [];
  const startMs = epochMs();
  for (const [side, policy, decide] of decides) {
    await decide('warm-up');
    const r: StreamRecords = {
      side,
      policy,
      admittedAtMs: [],
      admittedBy: [],
      asked: 0,
      refused: 0,
      errors: 0,
      unsettled: 0,
      localLimit: 0,
      reasonsBySecond: {},
    };
    records.push(r);
    hot.push(hotStream(args, r, decide, pending));
    trickle.push(trickleStream(decide, startMs));
  }
  process.stdout.write('ready\n');
  const timer = openLoop([...hot, ...trickle]);
  for await (const line of createInterface({ input: process.stdin })) {
    if (line.startsWith('hot ')) {
      const span = JSON.parse(line.slice(4)) as HotSpan;
      for (const s of hot) Object.assign(s, { fromMs: span.fromMs, untilMs: span.untilMs });
    }
    if (line.trim() === 'stop') break;
  }
  clearInterval(timer);
  const deadline = epochMs() + SETTLE_MS;
  while (pending.size > 0 && epochMs() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
  for (const c of clients) c.disconnect();
  const result: NodeRecords = { pid: process.pid, streams: records };
  process.stdout.write(JSON.stringify(result) + '\n', () => process.exit(0));
}

await main();
