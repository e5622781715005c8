// A process of the fleet in the smooth limiter's differential tests and benchmark. It opens its own
// client and store on the given Redis and its own RedisSmoothLimiter on the shared name.
//
// Mode `script`: the script's time (test mode: the script and this process's ManualClock take it)
// comes with each command on stdin, one JSON line per step; it answers each in the Guava driver's
// format. An acquire really waits in the limiter's line: the clock is moved to its alarm.
//
// Mode `timers` (the benchmark's floor): the same ready/go, then `lanes * count` bare setTimeout
// wake-ups, one every `intervalMs`; it prints how late each fired, in ms, as JSON.
//
// Mode `realtime`: answers `ready` to its first line once loaded; on the second, `lanes` loops
// each acquire `count` times on the server's clock, and it prints, as JSON, every reservation the script made for it (the server's `now`, version, wait and start, in
// µs, read from the script's replies), when each acquire returned here (wall clock, µs), the wait
// each acquire resolved to (µs), and how many scripts the store's timeout cut off. With `delayMs`,
// each of Redis's answers reaches the limiter 0 to `delayMs` ms late (random, from `seed`); with
// `spikes` too, 0 to 2 ms late but 1 in 200 between 30 and `delayMs` ms late, as a fast Redis with
// rare stalls (the adaptive timeout stays at its floor and cuts those off). With `defaults`, the
// store has the library's defaults (adaptive timeout, local fallback).
import { createInterface } from 'node:readline';
import { performance } from 'node:perf_hooks';
import { Redis } from 'ioredis';
import { ManualClock } from '../../../src/core/clock.js';
import { RedisStore, ioredisAdapter, type RedisAdapter } from '../../../src/redis.js';
import { RedisSmoothLimiter } from '../../../src/waiting/redis-smooth-limiter.js';
import { SMOOTH_SCRIPT } from '../../../src/stores/redis/scripts/smooth.js';
import { seeded } from '../../waiting/support.js';
import type { FleetModel } from './fleet-script.js';

interface WorkerArgs {
  readonly mode: 'script' | 'realtime' | 'timers';
  readonly intervalMs?: number;
  readonly port: number;
  /** The limiter's name and model (realtime mode; a script opens its own). */
  readonly name?: string;
  readonly model?: FleetModel;
  readonly lanes?: number;
  readonly count?: number;
  /** Realtime mode: the most each answer is held back, in ms, and the seed that picks each delay. */
  readonly delayMs?: number;
  readonly spikes?: boolean;
  readonly seed?: number;
  /** Realtime mode: the store takes the library's defaults (else a 5 s timeout, onError 'throw'). */
  readonly defaults?: boolean;
  /** Realtime mode, without defaults: the store's timeout in ms (default 5000); its circuit never opens. */
  readonly timeoutMs?: number;
}

/** Reservation is one reservation the script made, as its reply said (µs on the server's clock). */
export interface Reservation {
  readonly nowMicros: number;
  readonly version: number;
  readonly waitMicros: number;
  readonly startMicros: number;
  readonly permits: number;
}

const args = JSON.parse(process.argv[2] ?? '{}') as WorkerArgs;
const client = new Redis({ host: '127.0.0.1', port: args.port });
const reservations: Reservation[] = [];

/** The adapter, reading the smooth script's replies on the way: each reservation's now, version, wait and start. */
function recording(inner: RedisAdapter): RedisAdapter {
  const read = (argv: readonly string[], reply: unknown): unknown => {
    const r = reply as number[];
    for (let i = 6, k = 1; i < argv.length; i += 4, k += 5) {
      if (argv[i] === 'r' && r[k] === 1)
        reservations.push({
          nowMicros: r[0]!,
          version: r[k + 3]!,
          waitMicros: r[k + 1]!,
          startMicros: r[k + 2]!,
          permits: Number(argv[i + 1]),
        });
    }
    return reply;
  };
  return {
    cluster: inner.cluster,
    evalsha: (sha1, keys, argv) =>
      inner.evalsha(sha1, keys, argv).then((reply) => (sha1 === SMOOTH_SCRIPT.sha1 ? read(argv, reply) : reply)),
    eval: (source, keys, argv) => inner.eval(source, keys, argv).then((reply) => read(argv, reply)),
  };
}

/**
 * The adapter, each answer held back (random, from `seed`): 0 to `maxMs` ms, or with `spikes`, 0 to
 * 2 ms and 1 in 200 from 30 to `maxMs` ms. Redis has run the script; its answer is on its way.
 */
function delayed(inner: RedisAdapter, maxMs: number, spikes: boolean, seed: number): RedisAdapter {
  const random = seeded(seed);
  const delayMs = (): number => {
    if (!spikes) return random() * maxMs;
    return random() < 1 / 200 ? 30 + random() * (maxMs - 30) : random() * 2;
  };
  const later = <T>(reply: T): Promise<T> => new Promise((resolve) => setTimeout(() => resolve(reply), delayMs()));
  return {
    cluster: inner.cluster,
    evalsha: (sha1, keys, argv) => inner.evalsha(sha1, keys, argv).then(later),
    eval: (source, keys, argv) => inner.eval(source, keys, argv).then(later),
  };
}

function limiterOn(store: RedisStore, name: string, m: FleetModel): RedisSmoothLimiter {
  const common = { store, name, permitsPerSecond: m.rate };
  return m.kind === 'bursty'
    ? RedisSmoothLimiter.bursty({ ...common, maxBurstSeconds: m.maxBurstSeconds })
    : RedisSmoothLimiter.warmingUp({ ...common, warmupMs: m.warmupMicros / 1000, coldFactor: m.coldFactor });
}

interface Command {
  readonly op: 'open' | 'create' | 'acquire' | 'try' | 'reserve' | 'setRate';
  readonly name?: string;
  readonly model?: FleetModel;
  readonly nowMicros: number;
  readonly permits?: number;
  readonly timeoutMicros?: number;
  readonly rate?: number;
}

/** Runs an acquire or tryAcquire, moving the clock to the limiter's alarm when it must wait; resolves to the µs it waited, or false. */
async function waitFor<T>(
  limiter: RedisSmoothLimiter,
  clock: ManualClock,
  call: Promise<T>,
): Promise<{ value: T; micros: number }> {
  let settled = false;
  const tracked = call.then((value) => ((settled = true), value));
  await limiter.getRate(); // shares the call's script: once answered, the call is granted or in line
  let micros = 0;
  if (!settled) {
    const wakeAtMs = clock.nextTimerAtMs();
    if (wakeAtMs === undefined) throw new Error('a waiting acquire left no alarm');
    micros = Math.round((wakeAtMs - clock.now()) * 1000);
    clock.set(wakeAtMs);
  }
  return { value: await tracked, micros };
}

async function answer(limiter: RedisSmoothLimiter, clock: ManualClock, c: Command): Promise<string> {
  clock.set(c.nowMicros / 1000);
  switch (c.op) {
    case 'open':
      return 'ok';
    case 'create':
      await limiter.getRate();
      return 'ok';
    case 'setRate':
      await limiter.setRate(c.rate!);
      return 'ok';
    case 'reserve':
      return String(Math.round((await limiter.reserve(c.permits!)) * 1000));
    case 'acquire': {
      const { value: seconds, micros } = await waitFor(limiter, clock, limiter.acquire(c.permits!));
      if (Math.round(seconds * 1e6) !== micros)
        throw new Error(`acquire returned ${seconds} s but waited ${micros} µs`);
      return String(micros);
    }
    case 'try': {
      const { value, micros } = await waitFor(limiter, clock, limiter.tryAcquire(c.permits!, c.timeoutMicros! / 1000));
      return value ? `true ${micros}` : 'false';
    }
  }
}

async function scriptMode(): Promise<void> {
  const clock = new ManualClock(0);
  const adapter = ioredisAdapter(client);
  const store = new RedisStore({
    adapter,
    unsafeTestTime: true,
    clock,
    timers: clock,
    timeoutMs: 5000,
    onError: 'throw',
  });
  let limiter: RedisSmoothLimiter | undefined;
  for await (const line of createInterface({ input: process.stdin })) {
    const command = JSON.parse(line) as Command;
    // Each script opens its own limiter (a new name and model) in every process.
    if (command.op === 'open') limiter = limiterOn(store, command.name!, command.model!);
    if (limiter === undefined) throw new Error(`${command.op} before open`);
    process.stdout.write(`${await answer(limiter, clock, command)}\n`);
  }
}

async function realtimeMode(): Promise<void> {
  await readyGo();
  const base = ioredisAdapter(client);
  const adapter = recording(
    args.delayMs === undefined ? base : delayed(base, args.delayMs, args.spikes === true, args.seed ?? 1),
  );
  let cutOffs = 0;
  const observer = { storeCall: (e: { ok: boolean }) => void (e.ok || cutOffs++) };
  const store = new RedisStore(
    args.defaults === true
      ? { adapter, observer }
      : { adapter, observer, timeoutMs: args.timeoutMs ?? 5000, onError: 'throw', failuresToOpen: 1e9 },
  );
  const limiter = limiterOn(store, args.name!, args.model!);
  const admittedMicros: number[] = [];
  const waitedMicros: number[] = [];
  const lane = async (): Promise<void> => {
    for (let i = 0; i < args.count!; i++) {
      waitedMicros.push(Math.round((await limiter.acquire()) * 1e6));
      admittedMicros.push(Math.round((performance.timeOrigin + performance.now()) * 1000));
    }
  };
  await Promise.all(Array.from({ length: args.lanes ?? 1 }, lane));
  process.stdout.write(`${JSON.stringify({ reservations, admittedMicros, waitedMicros, cutOffs })}\n`);
}

/** Waits for the parent's ready and go lines, answering the first. */
async function readyGo(): Promise<void> {
  const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
  await lines.next();
  process.stdout.write('ready\n');
  await lines.next(); // go: every process of the fleet is loaded, so none starts while others compile
}

async function timersMode(): Promise<void> {
  await readyGo();
  const lateMs: number[] = [];
  const startMs = performance.now() + 10;
  for (let i = 0; i < args.lanes! * args.count!; i++) {
    const atMs = startMs + i * args.intervalMs!;
    await new Promise((resolve) => setTimeout(resolve, Math.ceil(atMs - performance.now())));
    lateMs.push(performance.now() - atMs);
  }
  process.stdout.write(`${JSON.stringify({ lateMs })}\n`);
}

if (args.mode === 'script') await scriptMode();
else if (args.mode === 'timers') await timersMode();
else await realtimeMode();
client.disconnect();
