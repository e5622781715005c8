/**
 * A bare HTTP/1.1 client connection for the load generator: it writes a request that was built
 * once, reads the status and finds the end of the response (Content-Length, chunked, or the
 * connection's end), and nothing else. node:http's client spends about 200 µs of CPU per request
 * on this machine, and a request that times out costs a new connection on top; at 10x the
 * capacity (4,000 requests a second) the generator would then fall behind its own schedule, and
 * the figures would measure the generator. This one does the same work for a fraction of that.
 */
import { connect, type Socket } from 'node:net';

/** ResponseEnd is where a complete response ends in the bytes read, its status, and whether the connection closes after it. */
export interface ResponseEnd {
  readonly status: number;
  readonly end: number;
  readonly close: boolean;
}

/**
 * parseResponseEnd returns the first complete response in `text` (bytes as latin1), or undefined
 * while it is incomplete. A response with neither Content-Length nor chunked encoding ends with
 * the connection, so it is taken as complete once its head is (the status is all the bench reads).
 */
export function parseResponseEnd(text: string): ResponseEnd | undefined {
  const headEnd = text.indexOf('\r\n\r\n');
  if (headEnd < 0) return undefined;
  const head = text.slice(0, headEnd + 2).toLowerCase();
  const status = Number(head.slice(9, 12));
  const close = /\r\nconnection:[ \t]*close\r\n/.test(head);
  const length = /\r\ncontent-length:[ \t]*(\d+)\r\n/.exec(head);
  if (length !== null) {
    const end = headEnd + 4 + Number(length[1]);
    return text.length >= end ? { status, end, close } : undefined;
  }
  if (!/\r\ntransfer-encoding:[ \t]*chunked\r\n/.test(head)) return { status, end: headEnd + 4, close: true };
  let at = headEnd + 4;
  for (;;) {
    const lineEnd = text.indexOf('\r\n', at);
    if (lineEnd < 0) return undefined;
    const size = parseInt(text.slice(at, lineEnd), 16);
    // The last chunk (size 0), then an empty line; trailers are not expected from the gateway.
    if (size === 0) return text.length >= lineEnd + 4 ? { status, end: lineEnd + 4, close } : undefined;
    at = lineEnd + 2 + size + 2;
    if (text.length < at) return undefined;
  }
}

/** RawConnection is one keep-alive connection carrying one request at a time. */
export class RawConnection {
  private readonly socket: Socket;
  private buffer = '';
  private pending: ((status: number | undefined, error?: string) => void) | undefined;
  private open = true;

  /** Connects to `host:port` at once; requests written before the connection is up are sent when it is. */
  constructor(
    host: string,
    port: number,
    private readonly onIdle: (c: RawConnection) => void,
  ) {
    this.socket = connect({ host, port, noDelay: true });
    this.socket.setEncoding('latin1');
    this.socket.on('data', (chunk: string) => this.read(chunk));
    this.socket.on('error', (error: NodeJS.ErrnoException) => this.fail(error.code ?? error.message));
    this.socket.on('close', () => this.fail('connection closed'));
  }

  /** usable is false once the connection has closed or was destroyed. */
  get usable(): boolean {
    return this.open;
  }

  /** send writes `request` and calls `done` once with the response's status, or with no status and an error. */
  send(request: string, done: (status: number | undefined, error?: string) => void): void {
    this.pending = done;
    this.socket.write(request, 'latin1');
  }

  /** abandon drops the request in flight and closes the connection: the server sees the client leave. */
  abandon(): void {
    this.pending = undefined;
    this.destroy();
  }

  /** destroy closes the connection. */
  destroy(): void {
    this.open = false;
    this.socket.destroy();
  }

  private read(chunk: string): void {
    this.buffer += chunk;
    const response = parseResponseEnd(this.buffer);
    if (response === undefined) return;
    this.buffer = this.buffer.slice(response.end);
    const done = this.pending;
    this.pending = undefined;
    if (response.close) this.destroy();
    else this.onIdle(this);
    done?.(response.status);
  }

  private fail(error: string): void {
    this.open = false;
    const done = this.pending;
    this.pending = undefined;
    done?.(undefined, error);
  }
}
