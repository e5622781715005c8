/**
 * The exchanges the traffic port serves: HTTP/1.x (node:http, node:https) and HTTP/2 (node:http2's
 * compatibility API), and what differs between the two for a proxy: where the host is, and how a
 * response tells that its stream is gone.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Http2ServerRequest, Http2ServerResponse } from 'node:http2';

/** ClientRequest is a request on the traffic port, over HTTP/1.x or HTTP/2. */
export type ClientRequest = IncomingMessage | Http2ServerRequest;

/** ClientResponse is the response to a {@link ClientRequest}. */
export type ClientResponse = ServerResponse | Http2ServerResponse;

/**
 * adoptAuthority gives an HTTP/2 request the `host` its `:authority` names, as a proxy that speaks
 * HTTP/1.1 onwards must (RFC 9113 section 8.3.1), so that routes, identities and forwarding fields
 * read one field whichever version the client spoke. It returns the problem of a request whose
 * `host` and `:authority` disagree (malformed, answered 400), or undefined.
 */
export function adoptAuthority(req: ClientRequest): string | undefined {
  if (req.httpVersionMajor !== 2) return adoptAbsoluteForm(req);
  const headers = req.headers as Record<string, string | string[] | undefined>;
  const authority = headers[':authority'];
  if (typeof authority !== 'string') return undefined;
  const host = headers.host;
  if (host === undefined) headers.host = authority;
  else if (host !== authority)
    return `the Host field (${String(host)}) names another authority than :authority (${authority})`;
  return undefined;
}

/** The absolute form of an HTTP/1.x request target: scheme, authority, then the path and query, if any. */
const ABSOLUTE_FORM = /^https?:\/\/([^/?#]*)([^#]*)/i;

/**
 * adoptAbsoluteForm reads an HTTP/1.x request in absolute form (`GET http://api.example/v1 HTTP/1.1`),
 * which a server must accept (RFC 9112 section 3.2.2): the target's authority replaces the Host
 * field, which the server must then ignore, and the path and query become the target, so routes,
 * identities and the upstream see the origin form. An authority that is empty or carries user
 * information (`user@host`, which a sender must not send) is a malformed request.
 */
function adoptAbsoluteForm(req: ClientRequest): string | undefined {
  const url = req.url;
  // The origin form, nearly every request: one character looked at.
  if (url === undefined || url.charCodeAt(0) === 47) return undefined;
  const absolute = ABSOLUTE_FORM.exec(url);
  if (absolute === null) return undefined;
  const authority = absolute[1]!;
  if (authority === '' || authority.includes('@'))
    return `the request target's authority (${JSON.stringify(authority.slice(0, 100))}) is empty or carries user information`;
  const rest = absolute[2]!;
  (req.headers as Record<string, string | string[] | undefined>).host = authority;
  req.url = rest === '' ? '/' : rest.startsWith('/') ? rest : `/${rest}`;
  return undefined;
}

/**
 * hasBody tells whether a request has a body to forward: HTTP/1.x says so with Content-Length or
 * Transfer-Encoding; HTTP/2 with no END_STREAM on its headers (Content-Length is optional there).
 */
export function hasBody(req: ClientRequest): boolean {
  if ('stream' in req) return !req.stream.endAfterHeaders;
  return Number(req.headers['content-length'] ?? 0) > 0 || req.headers['transfer-encoding'] !== undefined;
}

/** isGone tells whether a response's connection (HTTP/1.x) or stream (HTTP/2) is destroyed: nothing more can be sent. */
export function isGone(res: ClientResponse): boolean {
  return 'stream' in res ? res.stream.destroyed : res.destroyed;
}

/**
 * answered tells whether a closed exchange's response went out whole. An HTTP/2 response (and its
 * stream) says `writableFinished` when the client reset the stream too: its request says `aborted`
 * instead, which node sets only when the stream ends before the response has.
 */
export function answered(res: ClientResponse): boolean {
  return 'stream' in res ? !res.req.aborted : res.writableFinished;
}

/** overHttp2 tells whether a response goes out on an HTTP/2 stream, where connection-specific fields are forbidden. */
export function overHttp2(res: ClientResponse): res is Http2ServerResponse {
  return 'stream' in res;
}

/**
 * writeHead starts the answer on `res` with `status` and `fields`, a flat list (`[name, value,
 * name, value, ...]`): node takes it as it is, over HTTP/1.x and HTTP/2 (whose compatibility API
 * takes the same list, though its types name only an object), with no object built per answer.
 */
export function writeHead(res: ClientResponse, status: number, fields: string[]): void {
  (res as ServerResponse).writeHead(status, fields);
}
