/**
 * What bench/decision.ts and bench/decision-instructions.ts share: the service's config, the
 * requests sent, a gRPC client, and the peers of `floodgate ratelimit`, each a server of its own
 * (`serveBare`, run in a child process):
 *
 * - `grpc`: grpc-js answering a constant OK for 3 descriptors, deciding nothing (the transport's ceiling);
 * - `grpc-map`: grpc-js deciding each descriptor with a plain `Map` of counts (a fixed window per
 *   rule), answering what the service answers: each status's code, `current_limit`,
 *   `limit_remaining` and `duration_until_reset`, and the two draft `RateLimit` headers;
 * - `http`: node:http answering a constant JSON body.
 *
 * Both gRPC peers read and write their messages with grpc-js's own protobufjs codec, as loaded by
 * `loadRateLimitService` with the service's loader options.
 */
import { createServer } from 'node:http';
import * as grpc from '@grpc/grpc-js';
import { loadRateLimitService } from '../../packages/server/src/ratelimit/protocol/proto.js';

/** The service's config: 3 descriptors, limits never reached. {@link MAP_RULES} is the same for the Map peer. */
export const CONFIG = `domain: bench
descriptors:
  - key: user
    rate_limit: { unit: minute, requests_per_unit: 1000000000 }
  - key: route
    rate_limit: { unit: second, requests_per_unit: 1000000000, algorithm: sliding-window }
  - key: tenant
    rate_limit: { unit: hour, requests_per_unit: 1000000000, algorithm: token-bucket }
`;

interface MapRule {
  readonly unit: 'SECOND' | 'MINUTE' | 'HOUR';
  readonly unitMs: number;
  readonly requestsPerUnit: number;
}

/** {@link CONFIG}'s rules by descriptor key, each a fixed window for the Map peer. */
const MAP_RULES: Readonly<Record<string, MapRule>> = {
  user: { unit: 'MINUTE', unitMs: 60_000, requestsPerUnit: 1_000_000_000 },
  route: { unit: 'SECOND', unitMs: 1000, requestsPerUnit: 1_000_000_000 },
  tenant: { unit: 'HOUR', unitMs: 3_600_000, requestsPerUnit: 1_000_000_000 },
};

/** request returns the i-th request: 3 descriptors over 10,000 users, 50 routes, 20 tenants. */
export function request(i: number): Record<string, unknown> {
  const user = (i * 7919) % 10_000;
  return {
    domain: 'bench',
    descriptors: [
      { entries: [{ key: 'user', value: `u${user}` }] },
      { entries: [{ key: 'route', value: `/r${user % 50}` }] },
      { entries: [{ key: 'tenant', value: `t${user % 20}` }] },
    ],
  };
}

/** GrpcCaller calls ShouldRateLimit with the i-th request. */
export type GrpcCall = (i: number) => Promise<unknown>;

/** grpcCaller returns a client of the service (or a gRPC peer) on `port`. */
export function grpcCaller(port: number): { call: GrpcCall; close: () => void } {
  const Service = loadRateLimitService();
  const client = new Service(`127.0.0.1:${port}`, grpc.credentials.createInsecure()) as unknown as grpc.Client & {
    ShouldRateLimit(r: unknown, cb: (e: Error | null, v: unknown) => void): void;
  };
  const call: GrpcCall = (i) =>
    new Promise((resolve, reject) =>
      client.ShouldRateLimit(request(i), (e, v) => (e === null ? resolve(v) : reject(e))),
    );
  return { call, close: () => client.close() };
}

interface RawRequest {
  readonly domain: string;
  readonly hits_addend: number;
  readonly descriptors: ReadonlyArray<{
    readonly entries: ReadonlyArray<{ readonly key: string; readonly value: string }>;
    readonly hits_addend: { readonly value: string } | null;
  }>;
}

/** The Map peer's handler: a count per descriptor and window, and the service's answer for it. */
function mapHandler(): grpc.handleUnaryCall<RawRequest, unknown> {
  const windows = new Map<string, { startMs: number; count: number }>();
  return (call, callback) => {
    const req = call.request;
    const nowMs = Date.now();
    const hits = req.hits_addend > 0 ? req.hits_addend : 1;
    let overall = 'OK';
    const statuses: unknown[] = [];
    const policies: string[] = [];
    const remains: string[] = [];
    for (const [i, d] of req.descriptors.entries()) {
      const entry = d.entries[0]!;
      const rule = MAP_RULES[entry.key];
      if (rule === undefined) {
        statuses.push({ code: 'OK' });
        continue;
      }
      const startMs = nowMs - (nowMs % rule.unitMs);
      const key = `${req.domain}|${entry.key}=${entry.value}`;
      let window = windows.get(key);
      if (window === undefined || window.startMs !== startMs) {
        window = { startMs, count: 0 };
        windows.set(key, window);
      }
      const cost = d.hits_addend === null ? hits : Number(d.hits_addend.value);
      const allowed = window.count + cost <= rule.requestsPerUnit;
      if (allowed) window.count += cost;
      else overall = 'OVER_LIMIT';
      const remaining = rule.requestsPerUnit - window.count;
      const resetMs = startMs + rule.unitMs - nowMs;
      statuses.push({
        code: allowed ? 'OK' : 'OVER_LIMIT',
        current_limit: { requests_per_unit: rule.requestsPerUnit, unit: rule.unit, name: '' },
        limit_remaining: remaining,
        duration_until_reset: { seconds: String(Math.floor(resetMs / 1000)), nanos: (resetMs % 1000) * 1_000_000 },
      });
      policies.push(`"d${i}";q=${rule.requestsPerUnit};w=${rule.unitMs / 1000}`);
      remains.push(`"d${i}";r=${remaining};t=${Math.ceil(resetMs / 1000)}`);
    }
    callback(null, {
      overall_code: overall,
      statuses,
      response_headers_to_add: [
        { key: 'ratelimit-policy', value: policies.join(', ') },
        { key: 'ratelimit', value: remains.join(', ') },
      ],
    });
  };
}

/** serveBare runs a peer of `kind` (`grpc`, `grpc-map`, `http`) and prints `{ port }` once it listens. */
export function serveBare(kind: string): void {
  const body = JSON.stringify({ overallCode: 'OK', statuses: [{ code: 'OK' }, { code: 'OK' }, { code: 'OK' }] });
  if (kind === 'http') {
    const server = createServer((req, res) => {
      req.resume();
      req.on('end', () =>
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }).end(body),
      );
    });
    server.listen(0, '127.0.0.1', () =>
      console.log(JSON.stringify({ port: (server.address() as { port: number }).port })),
    );
    return;
  }
  const server = new grpc.Server();
  const answer = { overall_code: 'OK', statuses: [{ code: 'OK' }, { code: 'OK' }, { code: 'OK' }] };
  server.addService(loadRateLimitService().service, {
    ShouldRateLimit:
      kind === 'grpc-map' ? mapHandler() : (_call: unknown, cb: grpc.sendUnaryData<unknown>): void => cb(null, answer),
  });
  server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (_e, port) =>
    console.log(JSON.stringify({ port })),
  );
}
