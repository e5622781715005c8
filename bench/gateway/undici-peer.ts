/**
 * The undici peer of `floodgate serve`: a node:http server forwarding through one undici Pool with
 * `pool.stream` (the API the gateway uses), doing the same work per request as the gateway with
 * one per-IP token bucket rule:
 *
 * - to the upstream: the client's end-to-end headers (hop-by-hop fields and those `Connection`
 *   names dropped, `Host` left to undici), then `X-Forwarded-For` (the peer address),
 *   `X-Forwarded-Proto`, `X-Forwarded-Host` (the client's `Host`) and an RFC 7239 `Forwarded`
 *   element (`for=...;host=...;proto=http`), started afresh as the gateway does for an untrusted peer;
 * - to the client: the upstream's headers without hop-by-hop fields, plus `RateLimit-Policy`
 *   (`"per-client";q=<capacity>;w=<capacity / rate, s>`) and `RateLimit`
 *   (`"per-client";r=<remaining>;t=<s until full>`) from a Map token bucket per client IP;
 * - refused: 429 with the same two fields (`t` the wait for one token), `Retry-After`,
 *   `Cache-Control: no-store`, `Content-Type: application/problem+json` and the gateway's problem
 *   body (quota-exceeded, `violated-policies: ["per-client"]`), without touching the upstream.
 *
 * What it leaves out of the gateway's work: route matching, metrics, key expiry (its Map never
 * forgets a client), body size limits and upstream timeouts. With `capacity: 0` it is the bare
 * proxy: no bucket, no added headers, the client's headers passed as they are.
 */
import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import { Pool } from 'undici';

/** UndiciPeerOptions says what the peer limits: `capacity` 0 for the bare proxy. */
export interface UndiciPeerOptions {
  readonly upstreamPort: number;
  readonly capacity: number;
  readonly refillPerSecond: number;
}

const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'proxy-authenticate',
  'proxy-authorization',
]);

interface Bucket {
  tokens: number;
  updatedMs: number;
}

/** undiciPeer returns the peer's server, not yet listening. */
export function undiciPeer(options: UndiciPeerOptions): Server {
  const pool = new Pool(`http://127.0.0.1:${options.upstreamPort}`, {
    connections: 256,
    pipelining: 1,
    keepAliveTimeout: 4_000,
  });
  const { capacity, refillPerSecond } = options;
  const bare = capacity === 0;
  const perMs = refillPerSecond / 1000;
  const policy = `"per-client";q=${Math.floor(capacity)};w=${Math.max(1, Math.ceil(capacity / refillPerSecond))}`;
  const problem = JSON.stringify({
    type: 'https://iana.org/assignments/http-problem-types#quota-exceeded',
    title: 'Request cannot be satisfied as assigned quota has been exceeded',
    status: 429,
    'violated-policies': ['per-client'],
  });
  const problemLength = String(Buffer.byteLength(problem));
  const buckets = new Map<string, Bucket>();

  return createServer((req: IncomingMessage, res: ServerResponse) => {
    const peer = req.socket.remoteAddress ?? 'unknown';
    let rateLimit = '';
    if (!bare) {
      const nowMs = Date.now();
      let b = buckets.get(peer);
      if (b === undefined) buckets.set(peer, (b = { tokens: capacity, updatedMs: nowMs }));
      const tokens = Math.min(capacity, b.tokens + Math.max(0, nowMs - b.updatedMs) * perMs);
      if (tokens < 1) {
        const waitS = Math.ceil((1 - tokens) / perMs / 1000);
        res.writeHead(429, {
          'ratelimit-policy': policy,
          ratelimit: `"per-client";r=${Math.floor(tokens)};t=${waitS}`,
          'retry-after': String(waitS),
          'cache-control': 'no-store',
          'content-type': 'application/problem+json',
          'content-length': problemLength,
        });
        res.end(problem);
        return;
      }
      b.tokens = tokens - 1;
      b.updatedMs = nowMs;
      rateLimit = `"per-client";r=${Math.floor(b.tokens)};t=${Math.ceil((capacity - b.tokens) / perMs / 1000)}`;
    }
    const hasBody = req.headers['content-length'] !== undefined || req.headers['transfer-encoding'] !== undefined;
    const request = {
      path: req.url ?? '/',
      method: req.method as 'GET',
      headers: bare ? passed(req.headers) : forwarded(req.headers, peer),
      body: hasBody ? req : null,
    };
    pool
      .stream(request, (reply) => {
        const headers = endToEnd(reply.headers);
        if (!bare) {
          headers['ratelimit-policy'] = policy;
          headers.ratelimit = rateLimit;
        }
        res.writeHead(reply.statusCode, headers);
        return res;
      })
      .catch(() => {
        if (!res.headersSent) res.writeHead(502).end();
        else res.destroy();
      });
  });
}

/** The bare proxy's request headers: the client's, less `Host` and `Connection`. */
function passed(incoming: IncomingHttpHeaders): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const name in incoming) if (name !== 'host' && name !== 'connection') out[name] = incoming[name]!;
  return out;
}

/** The end-to-end headers of a message, less `Host`. */
function endToEnd(incoming: Record<string, string | string[] | undefined>): Record<string, string | string[]> {
  const conn = incoming.connection;
  const named =
    conn === undefined
      ? undefined
      : new Set(
          String(conn)
            .toLowerCase()
            .split(',')
            .map((s) => s.trim()),
        );
  const out: Record<string, string | string[]> = {};
  for (const name in incoming) {
    const value = incoming[name];
    if (value === undefined || name === 'host' || HOP_BY_HOP.has(name) || named?.has(name) === true) continue;
    out[name] = value;
  }
  return out;
}

/** The request headers to send upstream: end-to-end ones and the four forwarding fields of this hop. */
function forwarded(incoming: IncomingHttpHeaders, peer: string): Record<string, string | string[]> {
  const out = endToEnd(incoming);
  const host = incoming.host;
  out['x-forwarded-for'] = peer;
  out['x-forwarded-proto'] = 'http';
  if (host !== undefined) out['x-forwarded-host'] = host;
  out.forwarded = `for=${peer.includes(':') ? `"[${peer}]"` : peer}${host === undefined ? '' : `;host=${host.includes(':') ? `"${host}"` : host}`};proto=http`;
  return out;
}
