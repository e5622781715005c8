/**
 * The log lines of an upstream outage, as the store's are (store-log.ts): a dead upstream fails
 * every request sent to it, and a line per request would bury everything else. One line when an
 * upstream starts failing, one every `quietMs` while it goes on (with the count), one when it
 * answers again (with how long and how many); an upstream that flaps gets its first line at most
 * once per `quietMs`, the failures between counted in the next.
 */
import type { Logger } from 'pino';
import { Thinned } from './thinned.js';

/** UpstreamLogOptions configures an {@link UpstreamLog}. */
export interface UpstreamLogOptions {
  readonly log: Logger;
  /** The shortest time between two lines of one kind for one upstream, in ms (default 10,000). */
  readonly quietMs?: number;
  /** The time now in ms, on a clock that never steps back. */
  readonly now: () => number;
}

interface Outage {
  readonly sinceMs: number;
  failures: number;
  /** Whether its first line went out (a flapping upstream's may be thinned away, and then its back line too). */
  readonly logged: boolean;
}

interface UpstreamState {
  outage: Outage | undefined;
  readonly starts: Thinned;
  readonly ongoing: Thinned;
}

/** UpstreamFailureFacts is what the first line of an outage says of the failure that began it. */
export interface UpstreamFailureFacts {
  readonly route: string;
  readonly status: number;
  readonly error: string;
}

/**
 * UpstreamLog writes upstream outages to the log: `upstream failed` when one begins, `upstream
 * still failing` at most once per `quietMs` with the failures so far, `upstream back` when a
 * request is answered again. Upstreams are told apart by their URL as the config gives it (a
 * reload starts afresh), and named in the lines by origin.
 *
 * @example
 * const upstreamLog = new UpstreamLog({ log, now: () => performance.now() });
 * upstreamLog.failed(route.upstream, { route: 'api', status: 502, error: 'ECONNREFUSED' });
 * upstreamLog.answered(route.upstream);
 */
export class UpstreamLog {
  private readonly upstreams = new WeakMap<URL, UpstreamState>();
  private readonly quietMs: number;

  constructor(private readonly options: UpstreamLogOptions) {
    this.quietMs = options.quietMs ?? 10_000;
  }

  /** failed hears one request to `upstream` that the gateway answered for (502, 504). */
  failed(url: URL, facts: UpstreamFailureFacts): void {
    const state = this.stateOf(url);
    const upstream = url.origin;
    const outage = state.outage;
    if (outage === undefined) {
      const alsoSince = state.starts.hit();
      state.outage = { sinceMs: this.options.now(), failures: 1, logged: alsoSince !== undefined };
      // The first failure of an outage does not start the "still failing" period: the next line is quietMs away.
      state.ongoing.hit();
      if (alsoSince !== undefined)
        this.options.log.warn(
          {
            upstream,
            ...facts,
            ...(alsoSince > 0 ? { alsoSince } : {}),
            then: `further failures are counted, a line every ${this.quietMs / 1000} s, until it answers again`,
          },
          'upstream failed',
        );
      return;
    }
    outage.failures++;
    if (state.ongoing.hit() !== undefined)
      this.options.log.warn(
        { upstream, ...facts, failures: outage.failures, awayMs: Math.round(this.options.now() - outage.sinceMs) },
        'upstream still failing',
      );
  }

  /** answered hears a request to `upstream` answered by it: an outage, if any, has ended. */
  answered(url: URL): void {
    const state = this.upstreams.get(url);
    const outage = state?.outage;
    if (outage === undefined) return;
    state!.outage = undefined;
    if (outage.logged)
      this.options.log.info(
        { upstream: url.origin, awayMs: Math.round(this.options.now() - outage.sinceMs), failures: outage.failures },
        'upstream back: answering again',
      );
  }

  private stateOf(upstream: URL): UpstreamState {
    let state = this.upstreams.get(upstream);
    if (state === undefined) {
      state = {
        outage: undefined,
        starts: new Thinned(this.quietMs, this.options.now),
        ongoing: new Thinned(this.quietMs, this.options.now),
      };
      this.upstreams.set(upstream, state);
    }
    return state;
  }
}
