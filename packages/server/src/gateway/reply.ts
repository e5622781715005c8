/**
 * How the gateway answers a request itself (a refusal, a problem of its own), on its response or,
 * for an upgrade, on its socket: one writer for each, so every answer carries the same fields.
 */
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { FIELD, PROBLEM_CONTENT_TYPE, type HeaderPair } from 'floodgate/http';
import { overHttp2, writeHead, type ClientResponse } from './exchange.js';

/** Answer is what the gateway answers: a status with its header fields and body. */
export interface Answer {
  readonly status: number;
  readonly headers: readonly HeaderPair[];
  readonly body: string | undefined;
}

/** RFC 9110's reason phrases where node's are older. */
const TITLES: Readonly<Record<number, string>> = { 413: 'Content Too Large', 422: 'Unprocessable Content' };

/** The fields of a problem the gateway answers on its own behalf. */
const PROBLEM_FIELDS: readonly HeaderPair[] = Object.freeze([
  [FIELD.contentType, PROBLEM_CONTENT_TYPE],
  [FIELD.cacheControl, 'no-store'],
] as const);

/**
 * problem returns the gateway's own RFC 9457 answer for `status` (`type` about:blank, the status's
 * reason phrase as `title`) saying `detail`, with `extra` fields after the problem's own.
 */
export function problem(status: number, detail: string | undefined, extra: readonly HeaderPair[] = []): Answer {
  const body = JSON.stringify({
    type: 'about:blank',
    title: TITLES[status] ?? STATUS_CODES[status] ?? 'Error',
    status,
    detail,
  });
  return { status, headers: extra.length === 0 ? PROBLEM_FIELDS : [...PROBLEM_FIELDS, ...extra], body };
}

/**
 * reply writes `answer` on `res` with its length; after a 413 an HTTP/1.1 connection is closed,
 * since the rest of the body it refused would otherwise have to be read, and closed lingering
 * (see {@link lingerOnClose}) so that a client still sending it reads the 413 (HTTP/2 has no
 * connection-specific fields: the stream ends, and its unread body with it).
 */
export function reply(res: ClientResponse, answer: Answer): void {
  const body = answer.body ?? '';
  writeHead(res, answer.status, answer === lastAnswer ? lastFields : fieldsOf(res, answer, body));
  if (answer.status === 413 && !overHttp2(res) && res.socket !== null) lingerOnClose(res.socket);
  res.end(body);
}

/** How long a connection closed after a 413 goes on reading what its client still sends (nginx's lingering_time is 30 s). */
export const LINGER_MS = 5_000;

/**
 * lingerOnClose makes node's close of `socket` after the response (`destroySoon`, for a response
 * that says `Connection: close`) a lingering close, as nginx's: the gateway's side is ended, then
 * what the client still sends is read and dropped until it closes its side, or for {@link
 * LINGER_MS}. Closed at once, the client's next bytes would be answered with a reset, which
 * discards the answer it has not read yet: a client that writes its whole body before reading
 * (most HTTP/1.1 clients) would see a broken connection instead of the 413.
 */
function lingerOnClose(socket: Socket): void {
  socket.destroySoon = function lingering(this: Socket): void {
    if (this.writable) this.end();
    const timer = setTimeout(() => this.destroy(), LINGER_MS);
    timer.unref();
    this.once('end', () => this.destroy());
    this.once('close', () => clearTimeout(timer));
    this.resume();
  };
}

/**
 * The last answer written and its fields (node only reads them): a refusal answered again (see
 * decide.ts) is written from the same list. A 413's fields depend on the response: never kept.
 */
let lastAnswer: Answer | undefined;
let lastFields: string[] = [];

/** The fields of `answer` on `res` as node's flat list, its body's length included. */
function fieldsOf(res: ClientResponse, answer: Answer, body: string): string[] {
  const fields: string[] = [];
  const pairs = answer.headers;
  for (let i = 0; i < pairs.length; i++) fields.push(pairs[i]![0], pairs[i]![1]);
  fields.push('content-length', byteLengthText(body));
  if (answer.status === 413) {
    if (!overHttp2(res)) fields.push('connection', 'close');
  } else {
    lastAnswer = answer;
    lastFields = fields;
  }
  return fields;
}

/** The last body measured and its length, as text: a refusal's body is one string per rule, answered again and again. */
let lastBody = '';
let lastLength = '0';

/** The byte length of `body` in UTF-8, as text. */
function byteLengthText(body: string): string {
  if (body !== lastBody) {
    lastLength = String(Buffer.byteLength(body));
    lastBody = body;
  }
  return lastLength;
}

/**
 * replyOnSocket writes `answer` as an HTTP/1.1 response on the socket of an upgrade that is not
 * let through, then closes the connection.
 */
export function replyOnSocket(socket: Duplex, answer: Answer): void {
  let text = `HTTP/1.1 ${answer.status} ${STATUS_CODES[answer.status] ?? ''}\r\n`;
  for (const [name, value] of answer.headers) text += `${name}: ${value}\r\n`;
  const body = answer.body ?? '';
  text += `content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`;
  socket.end(text);
}
