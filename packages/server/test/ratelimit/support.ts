/** Test support for the decision service: services from fixtures, a gRPC client built from Envoy's protos, a JSON poster. */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import { ManualClock, MemoryStore, type Algorithm, type PolicyStore, type Store } from 'floodgate';
import { request } from 'undici';
import {
  createRateLimitService,
  formatConfigError,
  loadRateLimitService,
  parseDescriptorConfig,
  startRateLimitServers,
  type RateLimitService,
  type RateLimitServers,
  type DomainSpec,
} from '../../src/ratelimit/index.js';

/** fixturePath returns the path of a file under test/ratelimit/fixtures. */
export function fixturePath(name: string): string {
  return fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));
}

/** domainsOf returns the domains of YAML `text`, failing the test on config errors. */
export function domainsOf(text: string, source = 'inline.yaml'): DomainSpec[] {
  const parsed = parseDescriptorConfig(text, source);
  if ('errors' in parsed) throw new Error(parsed.errors.map(formatConfigError).join('\n'));
  return [...parsed.config.domains];
}

/** fixtureDomains returns the domains of a fixture file. */
export function fixtureDomains(name: string): DomainSpec[] {
  return domainsOf(readFileSync(fixturePath(name), 'utf8'), name);
}

/** A minute-aligned start, so fixed windows are predictable. */
export const START_MS = 1_700_000_040_000;

/** Running is a service with both listeners, a manual clock, and a gRPC client. */
export interface Running {
  readonly service: RateLimitService;
  readonly servers: RateLimitServers;
  readonly clock: ManualClock;
  readonly client: GrpcRls;
  close(): Promise<void>;
}

/** run starts a service for `domains` on loopback with free ports. */
export async function run(domains: DomainSpec[], store?: Store): Promise<Running> {
  const clock = new ManualClock(START_MS);
  const service = createRateLimitService({ domains, clock, store });
  const servers = await startRateLimitServers({ service, grpcPort: 0, httpPort: 0 });
  const client = new GrpcRls(servers.grpcPort!);
  return {
    service,
    servers,
    clock,
    client,
    close: async () => {
      client.close();
      await servers.close();
    },
  };
}

/** GrpcRls is a @grpc/grpc-js client of Envoy's RateLimitService, built from the protos. */
export class GrpcRls {
  private readonly client: grpc.Client & {
    ShouldRateLimit: (
      req: unknown,
      options: grpc.CallOptions,
      cb: (e: grpc.ServiceError | null, r: unknown) => void,
    ) => void;
  };

  constructor(port: number) {
    const Service = loadRateLimitService();
    this.client = new Service(`127.0.0.1:${port}`, grpc.credentials.createInsecure()) as never;
  }

  /** call resolves to the decoded response, or rejects with the gRPC error. */
  call(req: unknown): Promise<RlsResponse> {
    return new Promise((resolve, reject) => {
      this.client.ShouldRateLimit(req, { deadline: Date.now() + 5000 }, (error, response) =>
        error !== null ? reject(error) : resolve(response as RlsResponse),
      );
    });
  }

  close(): void {
    this.client.close();
  }
}

/** RlsResponse is a decoded RateLimitResponse (proto field names, enums as names). */
export interface RlsResponse {
  overall_code: string;
  statuses: Array<{
    code: string;
    current_limit: { requests_per_unit: number; unit: string; name: string } | null;
    limit_remaining: number;
    duration_until_reset: { seconds: string; nanos: number } | null;
  }>;
  response_headers_to_add: Array<{ key: string; value: string }>;
}

/** rl builds a request: `descriptors` as lists of [key, value] pairs. */
export function rl(
  domain: string,
  descriptors: Array<Array<[string, string]>>,
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    domain,
    descriptors: descriptors.map((entries) => ({ entries: entries.map(([key, value]) => ({ key, value })) })),
    ...extra,
  };
}

/** postJson posts `body` (an object, or raw text) and resolves to the status and parsed JSON. */
export async function postJson(
  port: number,
  path: string,
  body: unknown,
): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await request(`http://127.0.0.1:${port}${path}`, {
    method: 'POST',
    body: typeof body === 'string' ? body : JSON.stringify(body),
    headers: { 'content-type': 'application/json' },
    headersTimeout: 5000,
    bodyTimeout: 5000,
  });
  const text = await res.body.text();
  return { status: res.statusCode, json: text === '' ? {} : (JSON.parse(text) as Record<string, unknown>) };
}

/** PromiseStore is an asynchronous store with no consumeAll: a MemoryStore answering through promises. */
export class PromiseStore implements Store {
  readonly inner = new MemoryStore();
  bind(algorithm: Algorithm): PolicyStore {
    const t = this.inner.bind(algorithm);
    return {
      synchronous: false,
      consume: async (key, cost, nowMs) => t.consume(key, cost, nowMs),
      peek: async (key, cost, nowMs) => t.peek(key, cost, nowMs),
      refund: async (key, cost, nowMs) => t.refund(key, cost, nowMs),
      reset: async (key) => t.reset(key),
    };
  }
}
