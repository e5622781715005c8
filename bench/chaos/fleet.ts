/**
 * The fleet through an outage (issue 20: "a 10 s outage with 3 nodes on one key: admitted during
 * the outage <= the stated bound; after it, the key's remaining reflects what was admitted").
 * Three processes (bench/chaos/fleet-node.ts), each running every side with its own client, offer
 * 200 decisions/s each on one hot key of one real Redis, far above the limits (a token bucket of
 * 300 and 30/s, a fixed window of 300 per 20 s). The hot load starts on a window boundary, Redis is
 * hung (SIGSTOP) 15 s later, so that the census has counted the processes and the outage's middle
 * is the next boundary, and resumed (SIGCONT) 10 s after that, when the hot load stops. Once the
 * write-back has had 2.5 s, the key's remaining is read from Redis.
 *
 * Per side and policy: the admissions not decided by Redis (the fallback's, fail-open's, the
 * insurance limiter's), summed over the processes, against the stated bound for the span they
 * were made over (a token bucket: capacity + rate × span; a fixed window: the limit × the windows
 * the span touches), and the key's remaining on Redis against the truth: every admission of every
 * process, in time order, replayed on a fresh key of the policy (each taking a token or a count
 * when one is left: clamped at 0), read at the moment Redis was asked.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { RateLimiterRedis } from 'rate-limiter-flexible';
import { Limiter, fixedWindow, tokenBucket } from 'floodgate';
import { RedisStore, ioredisAdapter } from 'floodgate/redis';
import { startRedisServer } from '../../packages/floodgate/test/support/redis-server.js';
import {
  BUCKET,
  FLEET_SIDES,
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

export { FLEET_SIDES, type FleetPolicy, type FleetSide } from './fleet-plan.js';

/** Every process's records and what the parent saw, for a closer look than the table. */
const RECORDS_FILE = fileURLToPath(new URL('../../.bench-out/chaos-fleet.json', import.meta.url));
const NODE = fileURLToPath(new URL('./fleet-node.ts', import.meta.url));
const TSX_FLAGS = ['--conditions=floodgate-source', '--import', 'tsx'] as const;
const NODES = 3;
const HOT_PER_SECOND = 200;
/** From the hot load's start (a window boundary) to the hang: more than two census intervals of 5 s. */
const WARM_MS = 15_000;
const OUTAGE_MS = 10_000;
const SETTLE_MS = 2500;
/** Answers this long after the hang still count in it: calls cut off in it, settling late. */
const AFTER_HANG_MS = 1000;

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
/** The wall clock, as the policies' windows, floodgate's fallback and Redis's TIME all read it. */
const epochMs = (): number => Date.now();
/** How often Redis is read after it resumes, in ms, for when the key first showed spent. */
const POLL_MS = 50;
/** A key with at most this many left counts as spent (the refill adds a few between the charge and the read). */
const SPENT_AT_MOST = 10;

/** FleetFigures is one side and policy through the outage. */
export interface FleetFigures {
  readonly side: FleetSide;
  readonly policy: FleetPolicy;
  /** How many processes each local fallback took its share from (the policy's limit over the limit it showed), per process. */
  readonly nodesSeen: readonly number[];
  /** What the census on Redis counted just before the hang (its sorted set's size), when the side beats one. */
  readonly censusCount: number;
  /** Admissions not decided by Redis and answered in the hang (or within a second after it: the calls cut off in it), summed over the processes. */
  readonly admittedInOutage: number;
  /** The same, per process. */
  readonly admittedInOutageEach: readonly number[];
  /** Admissions not decided by Redis outside the hang: lapses while Redis was up (a call cut off at its deadline, the circuit opening). */
  readonly admittedInLapses: number;
  readonly bound: number;
  /** ms after Redis resumed until a read of the key first showed it spent (undefined: never within the settle time). */
  readonly spentAfterMs: number | undefined;
  readonly remaining: number;
  readonly truth: number;
  /** The answers' reasons in the whole seconds inside the hang, summed over the processes. */
  readonly reasonsInOutage: Record<string, number>;
  readonly errors: number;
  readonly unsettled: number;
}

/** A fleet process: started, told when to load the hot key, stopped. */
class FleetNode {
  private stdout = '';
  private stderr = '';
  private readonly exited: Promise<number | null>;

  constructor(private readonly child: ChildProcess) {
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (this.stdout += chunk));
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (this.stderr += chunk));
    this.exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
  }

  static async start(args: NodeArgs): Promise<FleetNode> {
    const node = new FleetNode(
      spawn(process.execPath, [...TSX_FLAGS, NODE, JSON.stringify(args)], { stdio: ['pipe', 'pipe', 'pipe'] }),
    );
    const failed = node.exited.then((code) =>
      Promise.reject(new Error(`a fleet process exited (${String(code)}) before it was ready: ${node.stderr.trim()}`)),
    );
    const ready = (async (): Promise<void> => {
      while (!node.stdout.startsWith('ready\n')) await sleep(20);
    })();
    await Promise.race([ready, failed]);
    return node;
  }

  hot(span: HotSpan): void {
    this.child.stdin!.write(`hot ${JSON.stringify(span)}\n`);
  }

  async stop(): Promise<NodeRecords> {
    this.child.stdin!.end('stop\n');
    const code = await this.exited;
    const line = this.stdout.split('\n').find((l) => l.startsWith('{'));
    if (code !== 0 || line === undefined)
      throw new Error(
        `a fleet process exited (${String(code)}): ${this.stderr.trim().split('\n').slice(-8).join('\n')}`,
      );
    return JSON.parse(line) as NodeRecords;
  }

  kill(): void {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGKILL');
  }
}

/** RedisReader reads the hot key's remaining from Redis under every side and policy, as a user's peek would. */
class RedisReader {
  private readonly redis: Redis;
  private readonly reads: Array<[string, () => Promise<number>]> = [];

  constructor(port: number) {
    this.redis = new Redis({ host: '127.0.0.1', port });
    this.redis.on('error', () => {});
    for (const side of FLEET_SIDES.filter((s) => s !== 'rlf-insured')) {
      // 'throw': a reader with no failure policy, so it never beats the census nor writes back.
      const store = new RedisStore({ adapter: ioredisAdapter(this.redis), prefix: prefixOf(side), onError: 'throw' });
      const bucket = new Limiter({ policy: tokenBucket(BUCKET), store });
      const window = new Limiter({ policy: fixedWindow(WINDOW), store });
      this.reads.push(
        [`${side}/token-bucket`, async () => (await bucket.peek(HOT_KEY)).remaining],
        [`${side}/fixed-window`, async () => (await window.peek(HOT_KEY)).remaining],
      );
    }
    const rlf = new RateLimiterRedis({
      storeClient: this.redis,
      keyPrefix: prefixOf('rlf-insured'),
      points: WINDOW.limit,
      duration: WINDOW.windowMs / 1000,
    });
    this.reads.push([
      'rlf-insured/fixed-window',
      async () => (await rlf.get(HOT_KEY))?.remainingPoints ?? WINDOW.limit,
    ]);
  }

  /** read returns each key's remaining now (a failed read is left out), and the epoch ms halfway through. */
  async read(): Promise<{ atMs: number; remaining: Map<string, number> }> {
    const startMs = epochMs();
    const remaining = new Map<string, number>();
    await Promise.all(
      this.reads.map(async ([name, read]) => remaining.set(name, await read().catch(() => Number.NaN))),
    );
    return { atMs: (startMs + epochMs()) / 2, remaining };
  }

  /** spentAfter reads every POLL_MS from `fromMs` to `untilMs`, and returns when each key first showed spent, in ms after `fromMs`. */
  async spentAfter(fromMs: number, untilMs: number): Promise<Map<string, number>> {
    const spent = new Map<string, number>();
    while (epochMs() < untilMs) {
      const { atMs, remaining } = await this.read();
      for (const [name, left] of remaining)
        if (!spent.has(name) && left <= SPENT_AT_MOST) spent.set(name, atMs - fromMs);
      await sleep(POLL_MS);
    }
    return spent;
  }

  close(): void {
    this.redis.disconnect();
  }
}

/** What the census sorted set of each side holds now: how many stores beat within its span. */
async function censusCounts(port: number): Promise<Map<FleetSide, number>> {
  const redis = new Redis({ host: '127.0.0.1', port });
  const counts = new Map<FleetSide, number>();
  for (const side of FLEET_SIDES) counts.set(side, await redis.zcard(`${prefixOf(side)}census`));
  redis.disconnect();
  return counts;
}

/** truthOf replays `admittedAtMs` (sorted) on a fresh key of `policy`, each taking one if any is left, and reads it at `atMs`. */
export function truthOf(policy: FleetPolicy, admittedAtMs: readonly number[], atMs: number): number {
  if (policy === 'fixed-window') {
    const window = Math.floor(atMs / WINDOW.windowMs);
    const inWindow = admittedAtMs.filter((t) => Math.floor(t / WINDOW.windowMs) === window).length;
    return Math.max(0, WINDOW.limit - inWindow);
  }
  let tokens: number = BUCKET.capacity;
  let lastMs = admittedAtMs[0] ?? atMs;
  const refill = (t: number): void => {
    tokens = Math.min(BUCKET.capacity, tokens + (BUCKET.refillPerSecond * Math.max(0, t - lastMs)) / 1000);
    lastMs = Math.max(lastMs, t);
  };
  for (const t of admittedAtMs) {
    refill(t);
    tokens = Math.max(0, tokens - 1);
  }
  refill(atMs);
  return Math.floor(tokens + 1e-9);
}

/** boundOf is the stated bound: what `policy` admits to a fresh key over `fromMs` to `toMs`. */
export function boundOf(policy: FleetPolicy, fromMs: number, toMs: number): number {
  if (policy === 'token-bucket') return Math.floor(BUCKET.capacity + (BUCKET.refillPerSecond * (toMs - fromMs)) / 1000);
  const windows = Math.floor(toMs / WINDOW.windowMs) - Math.floor(fromMs / WINDOW.windowMs) + 1;
  return WINDOW.limit * windows;
}

/** The outage as the parent saw it, and what it read from Redis afterwards. */
interface Observed {
  readonly hungMs: number;
  readonly resumedMs: number;
  readonly census: ReadonlyMap<FleetSide, number>;
  readonly spent: ReadonlyMap<string, number>;
  readonly read: { readonly atMs: number; readonly remaining: ReadonlyMap<string, number> };
}

/** Sums the streams' reasons over the whole seconds inside `fromMs` to `toMs`. */
function reasonsWithin(streams: readonly StreamRecords[], fromMs: number, toMs: number): Record<string, number> {
  const total: Record<string, number> = {};
  for (const s of streams) {
    for (const [second, reasons] of Object.entries(s.reasonsBySecond)) {
      if (Number(second) * 1000 < fromMs || (Number(second) + 1) * 1000 > toMs) continue;
      for (const [reason, n] of Object.entries(reasons)) total[reason] = (total[reason] ?? 0) + n;
    }
  }
  return total;
}

function figuresOf(streams: readonly StreamRecords[], observed: Observed): FleetFigures {
  const { side, policy } = streams[0]!;
  const inHang = (t: number): boolean => t >= observed.hungMs && t <= observed.resumedMs + AFTER_HANG_MS;
  const notOnRedis = (s: StreamRecords): number[] => s.admittedAtMs.filter((_, i) => s.admittedBy[i] === 1);
  const hangEach = streams.map((s) => notOnRedis(s).filter(inHang));
  const lastInHangMs = Math.max(observed.resumedMs, ...hangEach.flat());
  const limit = policy === 'token-bucket' ? BUCKET.capacity : WINDOW.limit;
  const all = streams.flatMap((s) => s.admittedAtMs).sort((a, b) => a - b);
  const sum = (of: (s: StreamRecords) => number): number => streams.reduce((n, s) => n + of(s), 0);
  return {
    side,
    policy,
    nodesSeen: streams.filter((s) => s.localLimit > 0).map((s) => Math.round((limit / s.localLimit) * 100) / 100),
    censusCount: observed.census.get(side)!,
    admittedInOutage: hangEach.flat().length,
    admittedInOutageEach: hangEach.map((ts) => ts.length),
    admittedInLapses: sum((s) => notOnRedis(s).filter((t) => !inHang(t)).length),
    bound: boundOf(policy, observed.hungMs, lastInHangMs),
    spentAfterMs: observed.spent.get(`${side}/${policy}`),
    remaining: observed.read.remaining.get(`${side}/${policy}`)!,
    truth: truthOf(policy, all, observed.read.atMs),
    reasonsInOutage: reasonsWithin(streams, observed.hungMs, observed.resumedMs),
    errors: sum((s) => s.errors),
    unsettled: sum((s) => s.unsettled),
  };
}

/** fleetChaos runs the fleet section on a redis-server of its own and returns each side's figures. */
export async function fleetChaos(): Promise<FleetFigures[]> {
  const servers = await startRedisServer();
  const port = servers.ports[0]!;
  const nodes: FleetNode[] = [];
  const reader = new RedisReader(port);
  try {
    for (let i = 0; i < NODES; i++) nodes.push(await FleetNode.start({ port, hotPerSecond: HOT_PER_SECOND }));
    // The hot load starts on a window boundary, so the outage's middle is the next one, for
    // floodgate's windows (aligned to the epoch) and rate-limiter-flexible's (from the key's first use) alike.
    const fromMs = Math.ceil((epochMs() + 500) / WINDOW.windowMs) * WINDOW.windowMs;
    const span: HotSpan = { fromMs, untilMs: fromMs + WARM_MS + OUTAGE_MS };
    for (const n of nodes) n.hot(span);
    await sleep(fromMs + WARM_MS - epochMs());
    const census = await censusCounts(port);
    const hungMs = epochMs();
    servers.signal(0, 'SIGSTOP');
    await sleep(span.untilMs - epochMs());
    const resumedMs = epochMs();
    servers.signal(0, 'SIGCONT');
    const spent = await reader.spentAfter(resumedMs, resumedMs + SETTLE_MS);
    const observed: Observed = { hungMs, resumedMs, census, spent, read: await reader.read() };
    const records = await Promise.all(nodes.map((n) => n.stop()));
    await mkdir(dirname(RECORDS_FILE), { recursive: true });
    await writeFile(
      RECORDS_FILE,
      JSON.stringify({
        observed: {
          ...observed,
          census: Object.fromEntries(census),
          spent: Object.fromEntries(spent),
          read: { atMs: observed.read.atMs, remaining: Object.fromEntries(observed.read.remaining) },
        },
        records,
      }),
    );
    const figures: FleetFigures[] = [];
    for (const side of FLEET_SIDES) {
      for (const policy of ['token-bucket', 'fixed-window'] as const) {
        const streams = records.flatMap((r) => r.streams).filter((s) => s.side === side && s.policy === policy);
        if (streams.length > 0) figures.push(figuresOf(streams, observed));
      }
    }
    return figures;
  } catch (error) {
    for (const n of nodes) n.kill();
    throw error;
  } finally {
    reader.close();
    servers.signal(0, 'SIGCONT');
    await servers.stop();
  }
}

const ratio = (a: number, b: number): string => (b > 0 ? `${(a / b).toFixed(2)}×` : '—');

/** FLEET_HEADER heads {@link fleetRows}. */
export const FLEET_HEADER = [
  'side',
  'policy',
  'answers in the hang',
  'share of',
  'census',
  'admitted in the hang',
  'bound',
  '÷ bound',
  'admitted in lapses',
  'spent on Redis after ms',
  'remaining on Redis',
  'truth',
  'errors',
];

/** Reasons as `fallback 1200, limit 3000`, largest first. */
const reasonsText = (reasons: Record<string, number>): string =>
  Object.entries(reasons)
    .sort((a, b) => b[1] - a[1])
    .map(([reason, n]) => `${reason} ${n}`)
    .join(', ');

/** fleetRows returns the fleet section's table rows. */
export function fleetRows(figures: readonly FleetFigures[]): string[][] {
  return figures.map((f) => [
    f.side,
    f.policy,
    reasonsText(f.reasonsInOutage),
    f.nodesSeen.length === 0 ? '—' : f.nodesSeen.join('/'),
    f.censusCount === 0 ? '—' : String(f.censusCount),
    `${f.admittedInOutage} (${f.admittedInOutageEach.join('+')})`,
    String(f.bound),
    ratio(f.admittedInOutage, f.bound),
    String(f.admittedInLapses),
    f.spentAfterMs === undefined ? 'never' : String(Math.round(f.spentAfterMs)),
    String(f.remaining),
    String(f.truth),
    String(f.errors + f.unsettled),
  ]);
}

/** FLEET_CAPTION says what the fleet table shows. */
export const FLEET_CAPTION = [
  `${NODES} processes, each ${HOT_PER_SECOND} decisions/s on one key (a token bucket of ${BUCKET.capacity} and ${BUCKET.refillPerSecond}/s; a fixed window of ${WINDOW.limit} per ${WINDOW.windowMs / 1000} s), Redis hung ${OUTAGE_MS / 1000} s (SIGSTOP) across a window boundary; the hot load stops when Redis resumes.`,
  '"answers in the hang": reasons in the whole seconds of the hang, over the processes; "share of": how many processes each local fallback divided the limit by (per process); "census": the stores its sorted set counted before the hang;',
  '"admitted in the hang": admissions not decided by Redis answered in the hang (or within 1 s after: calls cut off in it), summed over the processes (each); "bound": the stated bound, what the policy admits to a fresh key over the hang; "admitted in lapses": admissions not decided by Redis outside the hang, while Redis was up (calls cut off at the adaptive deadline, the circuit opening);',
  `"spent on Redis after": ms after Redis resumed until a read (every ${POLL_MS} ms) showed the key with at most ${SPENT_AT_MOST} left; "remaining on Redis" ${SETTLE_MS / 1000} s after it resumed, against the truth: every admission replayed in time order on a fresh key of the policy (clamped at 0); "errors": rejections and unsettled decisions.`,
].join(' ');
