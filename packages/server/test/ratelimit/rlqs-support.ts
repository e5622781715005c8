/** Test support for the Rate Limit Quota Service: a server on a free port and a client built from Envoy's protos. */
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import { QuotaService, type QuotaServiceOptions } from '../../src/ratelimit/quota/service.js';
import { addRateLimitQuotaService } from '../../src/ratelimit/quota/grpc.js';
import { loadRateLimitQuotaService } from '../../src/ratelimit/quota/proto.js';

/** Action is a decoded `BucketAction`. */
export interface Action {
  bucket_id: { bucket: Record<string, string> };
  bucket_action: 'quota_assignment_action' | 'abandon_action';
  quota_assignment_action?: {
    assignment_time_to_live: { seconds: string; nanos: number };
    rate_limit_strategy: {
      strategy: 'blanket_rule' | 'requests_per_time_unit' | 'token_bucket';
      blanket_rule?: string;
      requests_per_time_unit?: { requests_per_time_unit: string; time_unit: string };
      token_bucket?: { max_tokens: number; tokens_per_fill: { value: number }; fill_interval: { seconds: string } };
    };
  };
}

/** QuotaServer is a gRPC server with the quota service on a free loopback port. */
export interface QuotaServer {
  readonly quota: QuotaService;
  readonly port: number;
  close(): Promise<void>;
}

/** startQuotaServer starts the quota service over `options` on a free port. */
export async function startQuotaServer(options: QuotaServiceOptions): Promise<QuotaServer> {
  const quota = new QuotaService(options);
  const server = new grpc.Server();
  addRateLimitQuotaService(server, quota);
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (e, p) => (e ? reject(e) : resolve(p))),
  );
  return {
    quota,
    port,
    close: () =>
      new Promise((resolve) => {
        quota.close();
        server.forceShutdown();
        resolve();
      }),
  };
}

/** grantOf returns the requests per period an assignment hands out (token bucket fill or requests per time unit; 0 for DENY_ALL). */
export function grantOf(action: Action | undefined): number | undefined {
  const s = action?.quota_assignment_action?.rate_limit_strategy;
  if (s === undefined) return undefined;
  if (s.token_bucket !== undefined && s.strategy === 'token_bucket') return s.token_bucket.tokens_per_fill.value;
  if (s.requests_per_time_unit !== undefined && s.strategy === 'requests_per_time_unit')
    return Number(s.requests_per_time_unit.requests_per_time_unit);
  return s.blanket_rule === 'DENY_ALL' ? 0 : undefined;
}

/**
 * RlqsClient is one `StreamRateLimitQuotas` stream of a grpc-js client from the protos: it sends
 * reports, keeps every action received and the latest per bucket, and the stream's final status.
 */
export class RlqsClient {
  readonly received: Action[] = [];
  readonly latest = new Map<string, Action>();
  status: grpc.StatusObject | undefined;
  private readonly client: grpc.Client;
  private readonly call: grpc.ClientDuplexStream<unknown, { bucket_action: Action[] }>;
  private waiters: Array<() => void> = [];

  constructor(port: number) {
    const Ctor = loadRateLimitQuotaService();
    this.client = new Ctor(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
    this.call = (
      this.client as unknown as {
        StreamRateLimitQuotas(): grpc.ClientDuplexStream<unknown, { bucket_action: Action[] }>;
      }
    ).StreamRateLimitQuotas();
    this.call.on('data', (response) => {
      for (const a of response.bucket_action) {
        this.received.push(a);
        this.latest.set(JSON.stringify(a.bucket_id.bucket), a);
      }
      this.wake();
    });
    this.call.on('error', () => undefined);
    this.call.on('status', (status: grpc.StatusObject) => {
      this.status = status;
      this.wake();
    });
  }

  /** report sends one usage report: `buckets` each with `allowed` requests over `elapsedSeconds`. */
  report(
    domain: string,
    buckets: ReadonlyArray<Record<string, string>>,
    allowed: number | string,
    elapsedSeconds = 1,
    denied: number | string = 0,
  ): void {
    this.call.write({
      domain,
      bucket_quota_usages: buckets.map((bucket) => ({
        bucket_id: { bucket },
        time_elapsed: { seconds: elapsedSeconds },
        num_requests_allowed: allowed,
        num_requests_denied: denied,
      })),
    });
  }

  /** send writes a raw message. */
  send(message: unknown): void {
    this.call.write(message);
  }

  /** latestOf returns the latest action for `bucket`. */
  latestOf(bucket: Record<string, string>): Action | undefined {
    return this.latest.get(JSON.stringify(bucket));
  }

  /** until resolves once `check` holds (checked on every message and status), or rejects after `timeoutMs` saying what it waited for. */
  async until(check: () => boolean, what: string, timeoutMs = 5000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!check()) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`timed out waiting for ${what}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.min(left, 200));
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  /** ended resolves with the stream's status. */
  async ended(timeoutMs = 5000): Promise<grpc.StatusObject> {
    await this.until(() => this.status !== undefined, 'the stream to end', timeoutMs);
    return this.status!;
  }

  /** end half-closes the stream (the client is done sending). */
  end(): void {
    this.call.end();
  }

  /** close cancels the stream and closes the channel. */
  close(): void {
    this.call.cancel();
    this.client.close();
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w();
  }
}

/** ChildClient is a data plane in a child process ({@link CHILD}): the grants it printed, and a way to kill it. */
export interface ChildClient {
  readonly grants: number[];
  /** firstGrant resolves once the child printed a grant, or rejects after 20 s without one. */
  firstGrant(): Promise<void>;
  kill(): Promise<void>;
}

const CHILD = fileURLToPath(new URL('./rlqs-child.ts', import.meta.url));

/** startChildClient starts {@link CHILD} against `port` and `domain`. */
export function startChildClient(port: number, domain = 'edge'): ChildClient {
  const child = spawn(
    process.execPath,
    ['--conditions=floodgate-source', '--import', 'tsx', CHILD, String(port), domain],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  const grants: number[] = [];
  let wake: (() => void) | undefined;
  createInterface({ input: child.stdout! }).on('line', (line) => {
    grants.push((JSON.parse(line) as { grant: number }).grant);
    wake?.();
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    grants,
    firstGrant: () =>
      grants.length > 0
        ? Promise.resolve()
        : new Promise<void>((resolve, reject) => {
            const timer = setTimeout(() => reject(new Error('the child printed no grant in 20 s')), 20_000);
            wake = () => {
              clearTimeout(timer);
              resolve();
            };
          }),
    kill: async () => {
      child.kill('SIGKILL');
      await exited;
    },
  };
}
