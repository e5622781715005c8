/**
 * The optional access log: one JSON line per exchange (method, path in normal form, route, rules,
 * decision, status, upstream status, duration, the client's store key, bytes), written when the
 * exchange ends, for all exchanges or a sampled share of them. Off, it costs one property check
 * per request; metrics count every exchange, sampled out or not.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Http2ServerRequest, Http2ServerResponse } from 'node:http2';
import { pino, type Logger } from 'pino';

/** A request on HTTP/1.1 or HTTP/2. */
type Request = IncomingMessage | Http2ServerRequest;
/** A response on HTTP/1.1 or HTTP/2. */
type Response = ServerResponse | Http2ServerResponse;

/** AccessLogConfig is the config's `accessLog` section. */
export interface AccessLogConfig {
  readonly enabled: boolean;
  /** The share of exchanges logged, 0 to 1. */
  readonly sample: number;
  /** `stdout`, or a file path (appended to; made with its folder when missing). */
  readonly destination: string;
}

/**
 * Decision is how the gateway ended an exchange: `admitted` (forwarded, the upstream answered),
 * `queued` (admitted after waiting in a rule's queue), `refused` (a rule answered 429, 503, 401
 * or 400), `shed` (an overload guard refused it), `unmatched` (404), `bad-path` (400, an
 * ambiguous path), `error` (500, deciding failed), `upstream-failed` (502 or 504 from the gateway),
 * `too-large` (413), `client-left` (499: the client left before its answer ended).
 */
export type Decision =
  | 'admitted'
  | 'queued'
  | 'refused'
  | 'shed'
  | 'unmatched'
  | 'bad-path'
  | 'error'
  | 'upstream-failed'
  | 'too-large'
  | 'client-left';

/** AccessEntry is what one sampled exchange's line says, filled in as the exchange goes. */
export class AccessEntry {
  route: string | undefined = undefined;
  rules: readonly string[] | undefined = undefined;
  decision: Decision = 'admitted';
  /** The upstream's own status, when it answered. */
  upstreamStatus: number | undefined = undefined;
  /** The store key the exchange was counted (or refused) under, first rule's; hashed as `keys` says. */
  key: string | undefined = undefined;
  /** Whether the request went to the upstream and its outcome is not yet known. */
  forwarding = false;
  /** Whether the exchange closed (its line then waits for the upstream's outcome when still forwarding). */
  closed = false;
  /** Whether its answer was sent whole before it closed. */
  answered = false;

  constructor(
    readonly startedMs: number,
    readonly bytesReadBefore: number,
    readonly bytesWrittenBefore: number,
  ) {}
}

/** The property an exchange's entry is kept under on its response (set only on sampled exchanges). */
const ENTRY = Symbol('floodgate.access');

/** entryOf returns the access entry of an exchange being logged, or undefined (log off, or sampled out). */
export function entryOf(res: Response): AccessEntry | undefined {
  return (res as { [ENTRY]?: AccessEntry })[ENTRY];
}

/**
 * AccessLog writes the access lines of one gateway process.
 *
 * @example
 * const access = AccessLog.open({ enabled: true, sample: 0.1, destination: 'stdout' });
 * access?.begin(req, res); // in the request listener
 * access?.end(res); // in the exchange's close hook
 */
export class AccessLog {
  private constructor(
    private readonly log: Logger,
    private readonly sample: number,
    /** Writes out what is buffered and closes the file (nothing to do on stdout). */
    private readonly finish: () => Promise<void>,
  ) {}

  /** open returns the access log a config asks for, or undefined when it is off (or samples nothing). */
  static open(config: AccessLogConfig | undefined): AccessLog | undefined {
    if (config === undefined || !config.enabled || config.sample === 0) return undefined;
    // Lines on stdout are written at once, each a single write (whole beside the gateway's own log);
    // to a file they are buffered and flushed at shutdown.
    if (config.destination === 'stdout') {
      const log = pino({ base: null }, pino.destination({ dest: 1, sync: true }));
      return new AccessLog(log, config.sample, () => Promise.resolve());
    }
    const file = pino.destination({ dest: config.destination, sync: false, mkdir: true, minLength: 4096 });
    const finish = (): Promise<void> =>
      new Promise((resolve) => {
        file.once('close', () => resolve());
        file.once('error', () => resolve());
        file.end();
      });
    return new AccessLog(pino({ base: null }, file), config.sample, finish);
  }

  /** begin starts the entry of an exchange when it is sampled in. */
  begin(req: Request, res: Response): void {
    if (this.sample < 1 && Math.random() >= this.sample) return;
    // On HTTP/2 the socket carries every stream of the session: no per-exchange byte counts there.
    const socket = 'stream' in req ? undefined : req.socket;
    (res as { [ENTRY]?: AccessEntry })[ENTRY] = new AccessEntry(
      performance.now(),
      socket?.bytesRead ?? 0,
      socket?.bytesWritten ?? 0,
    );
  }

  /**
   * end writes the line of an exchange that was sampled in; call it once, when the exchange
   * closes. Closed while its forward is still settling, the line waits for {@link AccessLog.settled}.
   */
  end(res: Response, answered: boolean): void {
    const entry = entryOf(res);
    if (entry === undefined) return;
    entry.closed = true;
    entry.answered = answered;
    if (!entry.forwarding) this.write(res, entry);
  }

  /** settled hears the outcome of a forward (noted in the entry); the line goes out now when the exchange has closed already. */
  settled(res: Response, entry: AccessEntry): void {
    entry.forwarding = false;
    if (entry.closed) this.write(res, entry);
  }

  private write(res: Response, entry: AccessEntry): void {
    const req = res.req;
    const socket = 'stream' in req ? undefined : req.socket;
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const left = !entry.answered && (entry.decision === 'admitted' || entry.decision === 'queued');
    const decision = left ? 'client-left' : entry.decision;
    this.log.info(
      {
        method: req.method,
        // The query is left out: it may carry a credential.
        path: q < 0 ? url : url.slice(0, q),
        route: entry.route,
        rules: entry.rules,
        decision,
        status: decision === 'client-left' ? 499 : res.statusCode,
        upstreamStatus: entry.upstreamStatus,
        durationMs: Math.round((performance.now() - entry.startedMs) * 10) / 10,
        peer: req.socket.remoteAddress,
        key: entry.key,
        bytesIn: socket === undefined ? undefined : socket.bytesRead - entry.bytesReadBefore,
        bytesOut: socket === undefined ? undefined : socket.bytesWritten - entry.bytesWrittenBefore,
      },
      'access',
    );
  }

  /** close writes out what is buffered and closes the file (call it at shutdown, once no exchange is left). */
  close(): Promise<void> {
    return this.finish();
  }
}
