/**
 * The overload bench's load generator: an open loop. Arrival times are drawn in advance (a Poisson
 * process, phase by phase) and each request is sent at its time whether or not earlier ones were
 * answered, on a free keep-alive connection or a new one (there is no limit on connections), so a
 * slow server never slows the offered load down. Each request gives up `timeoutMs` after it was
 * due and closes its connection, as a client with a timeout does.
 *
 * The bench runs it in a child process of its own (`--child`, driven over IPC) so that it never
 * shares the gateway's CPU.
 */
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { SeededRandom } from 'floodgate-simulator';
import { RawConnection } from './raw-connection.js';

/** LoadPhase is a stretch of Poisson arrivals at `perSecond` requests a second for `durationMs`. */
export interface LoadPhase {
  readonly durationMs: number;
  readonly perSecond: number;
}

/** TierMix names the priority header and the share of requests that carry each tier name. */
export interface TierMix {
  readonly header: string;
  readonly tiers: ReadonlyArray<{ readonly name: string; readonly weight: number }>;
}

/** LoadPlan is one run of the open loop. */
export interface LoadPlan {
  /** Where to send GET requests, such as `http://127.0.0.1:8080/work`. */
  readonly url: string;
  readonly phases: readonly LoadPhase[];
  /** The client's timeout per request, in ms: past it the request is abandoned (its connection closed). */
  readonly timeoutMs: number;
  readonly seed: number;
  /** When to send the first arrival, as epoch ms (`Date.now()`); so other processes can act at known offsets. */
  readonly startAtEpochMs: number;
  readonly tierMix?: TierMix;
}

/** Status codes the records use besides HTTP's: no answer within the timeout, and a failed connection. */
export const TIMED_OUT = 0;
export const FAILED = -1;

/**
 * LoadRecords holds one entry per request, in arrival order: when it was due (ms after the start),
 * how late it was sent, its latency from the moment it was due to the end of the answer (ms; NaN
 * when it timed out or failed), its status ({@link TIMED_OUT}, {@link FAILED} or the HTTP status)
 * and its tier's index in the plan's mix (0 without one).
 */
export interface LoadRecords {
  readonly startEpochMs: number;
  readonly dueMs: number[];
  readonly lagMs: number[];
  readonly latencyMs: number[];
  readonly status: number[];
  readonly tier: number[];
  /** How many requests failed, by error code (such as ECONNRESET). */
  readonly errors: Record<string, number>;
}

/** poissonArrivals returns the arrival times of `phases`, in ms from the start, ascending; the same seed gives the same times. */
export function poissonArrivals(phases: readonly LoadPhase[], seed: number): number[] {
  const random = new SeededRandom(seed);
  const out: number[] = [];
  let phaseStartMs = 0;
  for (const phase of phases) {
    const endMs = phaseStartMs + phase.durationMs;
    if (phase.perSecond > 0) {
      for (
        let t = phaseStartMs + random.exponential(phase.perSecond / 1000);
        t < endMs;
        t += random.exponential(phase.perSecond / 1000)
      )
        out.push(t);
    }
    phaseStartMs = endMs;
  }
  return out;
}

function tiersOf(count: number, mix: TierMix | undefined, seed: number): number[] {
  const tiers = new Array<number>(count).fill(0);
  if (mix === undefined) return tiers;
  const random = new SeededRandom(seed ^ 0x5bd1e995);
  const total = mix.tiers.reduce((sum, t) => sum + t.weight, 0);
  for (let i = 0; i < count; i++) {
    let u = random.next() * total;
    let tier = 0;
    while (tier < mix.tiers.length - 1 && u >= mix.tiers[tier]!.weight) u -= mix.tiers[tier++]!.weight;
    tiers[i] = tier;
  }
  return tiers;
}

/**
 * runOpenLoop sends the plan's requests at their times and resolves once every one has been
 * answered, has timed out or has failed. One timer wakes the loop for the next due request; it
 * sends every request due by then, so a late wake-up sends the backlog at once rather than
 * spreading it (the lag is recorded).
 */
export async function runOpenLoop(plan: LoadPlan): Promise<LoadRecords> {
  const dueMs = poissonArrivals(plan.phases, plan.seed);
  const n = dueMs.length;
  const records: LoadRecords = {
    startEpochMs: plan.startAtEpochMs,
    dueMs,
    lagMs: new Array<number>(n).fill(0),
    latencyMs: new Array<number>(n).fill(NaN),
    status: new Array<number>(n).fill(FAILED),
    tier: tiersOf(n, plan.tierMix, plan.seed),
    errors: {},
  };
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, plan.startAtEpochMs - Date.now())));
  const loop = new OpenLoop(plan, records, performance.now() - (Date.now() - plan.startAtEpochMs));
  await loop.finished;
  return records;
}

/** OpenLoop is one run in progress: `finished` resolves once every request has ended. */
class OpenLoop {
  readonly finished: Promise<void>;
  private readonly host: string;
  private readonly port: number;
  /** Each tier's request, written once: `GET path` with Host and the tier header. */
  private readonly requests: string[];
  /** Connections with no request on them, newest last: a request takes one or opens a new one. */
  private readonly idle: RawConnection[] = [];
  private readonly all = new Set<RawConnection>();
  private next = 0;
  private open: number;
  private resolve: () => void = () => {};

  constructor(
    private readonly plan: LoadPlan,
    private readonly records: LoadRecords,
    /** performance.now() at the plan's start. */
    private readonly originMs: number,
  ) {
    const url = new URL(plan.url);
    this.host = url.hostname;
    this.port = Number(url.port);
    const tierLines =
      plan.tierMix === undefined ? [''] : plan.tierMix.tiers.map((t) => `${plan.tierMix!.header}: ${t.name}\r\n`);
    this.requests = tierLines.map((line) => `GET ${url.pathname} HTTP/1.1\r\nhost: ${url.host}\r\n${line}\r\n`);
    this.open = records.dueMs.length;
    this.finished = new Promise<void>((resolve) => (this.resolve = resolve)).then(() =>
      this.all.forEach((c) => c.destroy()),
    );
    if (this.open === 0) this.resolve();
    else this.wake();
  }

  private readonly wake = (): void => {
    const { dueMs } = this.records;
    const nowMs = performance.now();
    while (this.next < dueMs.length && this.originMs + dueMs[this.next]! <= nowMs) this.send(this.next++, nowMs);
    if (this.next < dueMs.length)
      setTimeout(this.wake, Math.max(0, this.originMs + dueMs[this.next]! - performance.now()));
  };

  private send(i: number, nowMs: number): void {
    const dueAtMs = this.originMs + this.records.dueMs[i]!;
    this.records.lagMs[i] = nowMs - dueAtMs;
    // The timeout runs from when the request was due: one already past it is not sent (its client
    // would have given up), so a generator that falls behind does not feed on itself.
    const leftMs = dueAtMs + this.plan.timeoutMs - nowMs;
    if (leftMs <= 0) return this.end(i, TIMED_OUT, dueAtMs, 'not sent: the generator was late');
    const connection = this.take();
    const timer = setTimeout(() => {
      connection.abandon();
      this.all.delete(connection);
      this.end(i, TIMED_OUT, dueAtMs, undefined);
    }, leftMs);
    connection.send(this.requests[this.records.tier[i]!]!, (status, error) => {
      clearTimeout(timer);
      if (!connection.usable) this.all.delete(connection);
      this.end(i, status ?? FAILED, dueAtMs, error);
    });
  }

  private take(): RawConnection {
    for (let c = this.idle.pop(); c !== undefined; c = this.idle.pop()) if (c.usable) return c;
    const connection = new RawConnection(this.host, this.port, (c) => this.idle.push(c));
    this.all.add(connection);
    return connection;
  }

  private end(i: number, status: number, dueAtMs: number, error: string | undefined): void {
    this.records.status[i] = status;
    if (status > 0) this.records.latencyMs[i] = performance.now() - dueAtMs;
    if (error !== undefined) this.records.errors[error] = (this.records.errors[error] ?? 0) + 1;
    if (--this.open === 0) this.resolve();
  }
}

// The child side: one plan per IPC message, one LoadRecords back.
if (
  process.argv[1] === fileURLToPath(import.meta.url) &&
  process.argv.includes('--child') &&
  process.send !== undefined
) {
  process.on('message', (plan: LoadPlan) => {
    void runOpenLoop(plan).then((records) => process.send!(records));
  });
  process.send('ready');
}
