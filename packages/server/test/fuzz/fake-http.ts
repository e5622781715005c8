/**
 * A request and a response for calling a node:http request listener directly, with no socket:
 * the request is a readable stream of its body, the response resolves {@link FakeResponse.done}
 * with the status and body when the listener ends it.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Readable } from 'node:stream';

/** FakeRequestParts is what a fake request carries. */
export interface FakeRequestParts {
  readonly method: string;
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Buffer;
}

/** fakeRequest returns `parts` as an IncomingMessage a listener can read. */
export function fakeRequest(parts: FakeRequestParts): IncomingMessage {
  const req = Readable.from(parts.body.length === 0 ? [] : [parts.body]) as unknown as IncomingMessage &
    Record<string, unknown>;
  const headers = Object.create(null) as Record<string, string>;
  const distinct = Object.create(null) as Record<string, string[]>;
  for (const [name, value] of Object.entries(parts.headers)) {
    headers[name.toLowerCase()] = value;
    distinct[name.toLowerCase()] = [value];
  }
  Object.assign(req, { method: parts.method, url: parts.url, headers, headersDistinct: distinct, httpVersion: '1.1' });
  return req;
}

/** FakeResponse is a ServerResponse that keeps what the listener answered. */
export interface FakeResponse {
  readonly res: ServerResponse;
  /** done resolves when the listener ends the response. */
  readonly done: Promise<{ status: number; body: string }>;
}

/** fakeResponse returns a response that records its status, headers and body. */
export function fakeResponse(): FakeResponse {
  let finish!: (answer: { status: number; body: string }) => void;
  const done = new Promise<{ status: number; body: string }>((resolve) => (finish = resolve));
  const headers = new Map<string, unknown>();
  const res = {
    statusCode: 200,
    headersSent: false,
    writableEnded: false,
    setHeader(name: string, value: unknown) {
      headers.set(name.toLowerCase(), value);
      return res;
    },
    getHeader: (name: string) => headers.get(name.toLowerCase()),
    removeHeader: (name: string) => headers.delete(name.toLowerCase()),
    hasHeader: (name: string) => headers.has(name.toLowerCase()),
    writeHead(status: number) {
      res.statusCode = status;
      res.headersSent = true;
      return res;
    },
    write: () => true,
    end(body?: unknown) {
      res.writableEnded = true;
      finish({ status: res.statusCode, body: body === undefined ? '' : String(body) });
      return res;
    },
    on: () => res,
    once: () => res,
  };
  return { res: res as unknown as ServerResponse, done };
}
