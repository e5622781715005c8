/**
 * A fleet for RLQS tests and bench/rlqs-edges.ts: `floodgate ratelimit` replicas on one real Redis,
 * and data planes that behave as Envoy's filter does with its assignments. A {@link FleetClient}
 * reports one bucket every interval (what it allowed, under its assignment, and what it denied),
 * holds each assignment from its arrival until its TTL runs out or the next replaces it, and, when
 * its stream ends under it, keeps that assignment and reconnects to a live replica. A
 * {@link GrantSampler} sums the assignments held at every instant it looks.
 */
import { performance } from 'node:perf_hooks';
import * as grpc from '@grpc/grpc-js';
import { loadRateLimitQuotaService } from '../../src/ratelimit/quota/proto.js';
import { startServiceProcess, type ServiceProcess } from './processes.js';
import { fixturePath } from './support.js';
import { grantOf, type Action } from './rlqs-support.js';

/** The fixture's bucket: 100 requests a second, assignments held for 3 s. */
export const EDGE_LIMIT = 100;
export const EDGE_TTL_MS = 3000;
const BUCKET = { name: 'api' };

/** Fleet is replicas of `floodgate ratelimit` on one Redis, serving `fixtures/rlqs-edges.yaml`. */
export class Fleet {
  readonly replicas: ServiceProcess[] = [];
  private next = 0;

  private constructor(private readonly redisPort: number) {}

  /** start starts `count` replicas on the Redis at `redisPort`. */
  static async start(redisPort: number, count: number): Promise<Fleet> {
    const fleet = new Fleet(redisPort);
    fleet.replicas.push(...(await Promise.all(Array.from({ length: count }, () => fleet.startReplica()))));
    return fleet;
  }

  /** restart stops replica `index` (SIGTERM) and starts another in its place (on new ports). */
  async restart(index: number): Promise<void> {
    const old = this.replicas[index]!;
    this.replicas[index] = undefined as unknown as ServiceProcess;
    await old.stop();
    this.replicas[index] = await this.startReplica();
  }

  /** portOf returns the gRPC port of replica `index`, or of the next live one when it is down. */
  portOf(index: number): number {
    const live = this.replicas.filter((r) => r !== undefined);
    const replica = this.replicas[index] ?? live[this.next++ % live.length]!;
    return replica.grpcPort;
  }

  /** metricsOf returns replica `index`'s Prometheus text. */
  async metricsOf(index: number): Promise<string> {
    const response = await fetch(`http://127.0.0.1:${this.replicas[index]!.metricsPort!}/metrics`);
    return response.text();
  }

  async stop(): Promise<void> {
    await Promise.all(this.replicas.filter((r) => r !== undefined).map((r) => r.stop()));
  }

  private startReplica(): Promise<ServiceProcess> {
    const config = fixturePath('rlqs-edges.yaml');
    const redis = ['--redis', `127.0.0.1:${this.redisPort}`];
    return startServiceProcess(['--config', config, '--raw-values', '--metrics-port', '0', '--no-watch', ...redis]);
  }
}

/** ClientPlan is how a {@link FleetClient} behaves. */
export interface ClientPlan {
  /** Requests a second it would send with no limit. */
  readonly wantPerSecond: number;
  /** Reports this many times its grant as allowed, ignoring its assignment (undefined: it follows it). */
  readonly overReport?: number;
  /** Its reporting interval in ms (whole seconds, as Envoy reports `time_elapsed`; default 1000). */
  readonly intervalMs?: number;
  /** How much its demand swings from one interval to the next: `wantPerSecond` times 1 ± this, in turn (default 0). */
  readonly swing?: number;
}

/** FleetClient is one data plane: one RLQS stream (reopened when it ends under it), one bucket. */
export class FleetClient {
  /** The grant of the assignment held (requests a second; 0 for DENY_ALL), undefined before the first. */
  grant: number | undefined;
  private liveUntilMs = 0;
  /** When it first held a grant above 0 (performance.now()), and when it first reported. */
  firstGrantAtMs: number | undefined;
  firstReportAtMs: number | undefined;
  private call: grpc.ClientDuplexStream<unknown, { bucket_action: Action[] }> | undefined;
  private client: grpc.Client | undefined;
  private timer: NodeJS.Timeout | undefined;
  private reported = false;
  private reports = 0;
  private closed = false;

  constructor(
    private readonly fleet: Fleet,
    private readonly replica: number,
    private readonly plan: ClientPlan,
  ) {}

  /** start opens its stream and reports now and every interval after. */
  start(): void {
    this.open();
    this.report();
    this.timer = setInterval(() => this.report(), this.plan.intervalMs ?? 1000);
  }

  /** held returns the grant it holds at `nowMs` (0 once its assignment's TTL has run out, or once closed). */
  held(nowMs: number): number {
    return this.closed || nowMs >= this.liveUntilMs ? 0 : (this.grant ?? 0);
  }

  /** close stops it: its stream is cancelled (the service frees its share) and it holds nothing. */
  close(): void {
    this.closed = true;
    clearInterval(this.timer);
    this.call?.cancel();
    this.client?.close();
  }

  private open(): void {
    const Ctor = loadRateLimitQuotaService();
    this.client = new Ctor(`127.0.0.1:${this.fleet.portOf(this.replica)}`, grpc.credentials.createInsecure());
    const call = (
      this.client as unknown as {
        StreamRateLimitQuotas(): grpc.ClientDuplexStream<unknown, { bucket_action: Action[] }>;
      }
    ).StreamRateLimitQuotas();
    this.call = call;
    this.reported = false;
    call.on('data', (response) => {
      for (const action of response.bucket_action) this.hold(action);
    });
    call.on('error', () => undefined);
    // A stream ended under it (its replica failed or stopped): it keeps its assignment and reconnects.
    call.on('status', () => {
      if (this.closed || this.call !== call) return;
      this.client?.close();
      setTimeout(() => {
        if (!this.closed) this.open();
      }, 100);
    });
  }

  private hold(action: Action): void {
    const grant = grantOf(action);
    if (grant === undefined) return;
    const now = performance.now();
    this.grant = grant;
    this.liveUntilMs = now + Number(action.quota_assignment_action!.assignment_time_to_live.seconds) * 1000;
    if (grant > 0 && this.firstGrantAtMs === undefined) this.firstGrantAtMs = now;
  }

  /** report sends what it allowed and denied since its last report, as Envoy's filter counts them. */
  private report(): void {
    const seconds = (this.plan.intervalMs ?? 1000) / 1000;
    const swing = (this.plan.swing ?? 0) * (this.reports++ % 2 === 0 ? 1 : -1);
    const want = Math.round(this.plan.wantPerSecond * (1 + swing) * seconds);
    const holding = this.held(performance.now());
    const assigned = this.grant !== undefined && performance.now() < this.liveUntilMs;
    // Without an assignment, Envoy applies no_assignment_behavior: ALLOW_ALL here.
    const could = assigned ? Math.round(holding * seconds) : want;
    const allowed =
      this.plan.overReport === undefined ? Math.min(want, could) : Math.max(could, 1) * this.plan.overReport;
    const denied = this.plan.overReport === undefined ? want - allowed : 0;
    this.firstReportAtMs ??= performance.now();
    this.call?.write({
      domain: 'edge',
      bucket_quota_usages: [
        {
          bucket_id: { bucket: BUCKET },
          time_elapsed: { seconds: this.reported ? seconds : 0 },
          num_requests_allowed: allowed,
          num_requests_denied: denied,
        },
      ],
    });
    this.reported = true;
  }
}

/** SampleCounts are what a {@link GrantSampler} saw: samples taken, those over the limit, and the largest sum. */
export interface SampleCounts {
  readonly samples: number;
  readonly over: number;
  readonly maxSum: number;
}

/** GrantSampler sums the grants `clients()` hold every `everyMs` (default 10) and counts the sums over `limit`. */
export class GrantSampler {
  private samples = 0;
  private over = 0;
  private maxSum = 0;
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly clients: () => readonly FleetClient[],
    private readonly limit: number,
    everyMs = 10,
  ) {
    this.timer = setInterval(() => this.sample(), everyMs);
  }

  /** counts returns the counts so far. */
  counts(): SampleCounts {
    return { samples: this.samples, over: this.over, maxSum: this.maxSum };
  }

  stop(): SampleCounts {
    clearInterval(this.timer);
    return this.counts();
  }

  private sample(): void {
    const now = performance.now();
    let sum = 0;
    for (const c of this.clients()) sum += c.held(now);
    this.samples++;
    if (sum > this.limit) this.over++;
    this.maxSum = Math.max(this.maxSum, sum);
  }
}

/** sleep resolves after `ms` (the fleet runs on real time: real processes and a real Redis). */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
