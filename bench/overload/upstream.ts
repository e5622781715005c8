/**
 * The overload bench's upstream: a service with a fixed number of slots, each busy for a fixed
 * service time per request, behind an unbounded first-in, first-out queue. It finishes the work of
 * a request whose client has left (the slot stays busy; only the answer is dropped), as most
 * servers do, so abandoned requests still cost capacity. With 8 slots × 20 ms it serves 400
 * requests a second.
 *
 * A control endpoint changes the capacity now or at a given epoch time, resets the queue between
 * runs and reports the state:
 *
 *   POST /_control/capacity?slots=4&serviceMs=40&atEpochMs=1700000000000   (each field optional)
 *   POST /_control/reset?slots=8&serviceMs=20   (drops every queued request, sets the capacity)
 *   GET  /_control/state                         ({ slots, serviceMs, busy, queued, served, abandoned })
 *
 * Run alone: `node --import tsx bench/overload/upstream.ts --slots 8 --service-ms 20`; it prints
 * `PORT n` once listening on 127.0.0.1.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

/** Capacity is a service's slots and the time each request holds one, in ms. */
export interface Capacity {
  readonly slots: number;
  readonly serviceMs: number;
}

/** UpstreamState is what {@link SlotService.state} reports. */
export interface UpstreamState extends Capacity {
  /** Slots working now (above `slots` for a while after the slots were cut). */
  readonly busy: number;
  /** Requests waiting for a slot. */
  readonly queued: number;
  /** Requests answered to a client still there. */
  readonly served: number;
  /** Requests worked on whose client had left, so nobody got the answer. */
  readonly abandoned: number;
}

interface Job {
  readonly res: ServerResponse;
  readonly arrivedMs: number;
}

const OK_HEADERS = { 'content-type': 'text/plain', 'content-length': '2' } as const;

/**
 * SlotService is the queue and the slots, apart from HTTP. A slot that finishes a request starts
 * the next one at the moment the last one was due to end, not when its timer happened to fire, so a
 * late timer does not lower the capacity: over any busy stretch it serves exactly `slots /
 * serviceMs` requests a millisecond.
 */
export class SlotService {
  private capacity: Capacity;
  private queue: Job[] = [];
  private head = 0;
  private busy = 0;
  private served = 0;
  private abandoned = 0;

  /** Creates an idle service with `capacity`. */
  constructor(capacity: Capacity) {
    this.capacity = capacity;
  }

  /** arrive queues one request; it is answered 200 once a slot has worked on it for `serviceMs`. */
  arrive(res: ServerResponse): void {
    this.queue.push({ res, arrivedMs: performance.now() });
    this.startWhileFree(performance.now());
  }

  /** setCapacity changes the slots and the service time of requests started from now on. */
  setCapacity(capacity: Capacity): void {
    this.capacity = capacity;
    this.startWhileFree(performance.now());
  }

  /** reset drops every queued request (closing the connections still open) and sets `capacity`. */
  reset(capacity: Capacity): void {
    for (let i = this.head; i < this.queue.length; i++) this.queue[i]!.res.destroy();
    this.queue = [];
    this.head = 0;
    this.served = 0;
    this.abandoned = 0;
    this.setCapacity(capacity);
  }

  /** state returns the capacity, the slots at work, the queue and the counts since the last reset. */
  state(): UpstreamState {
    return {
      ...this.capacity,
      busy: this.busy,
      queued: this.queue.length - this.head,
      served: this.served,
      abandoned: this.abandoned,
    };
  }

  private startWhileFree(startMs: number): void {
    while (this.busy < this.capacity.slots && this.head < this.queue.length) this.start(startMs);
  }

  private start(startMs: number): void {
    const job = this.queue[this.head++]!;
    if (this.head > 1024 && this.head * 2 > this.queue.length) {
      this.queue = this.queue.slice(this.head);
      this.head = 0;
    }
    this.busy++;
    const endMs = Math.max(startMs, job.arrivedMs) + this.capacity.serviceMs;
    setTimeout(() => this.finish(job, endMs), Math.max(0, endMs - performance.now()));
  }

  private finish(job: Job, endMs: number): void {
    this.busy--;
    if (job.res.destroyed) this.abandoned++;
    else {
      this.served++;
      job.res.writeHead(200, OK_HEADERS).end('ok');
    }
    this.startWhileFree(endMs);
  }
}

/** startUpstream listens on 127.0.0.1 (port 0: a free one) and resolves with the server, its port and its service. */
export async function startUpstream(
  capacity: Capacity,
  port = 0,
): Promise<{ server: Server; port: number; service: SlotService }> {
  const service = new SlotService(capacity);
  const server = createServer((req, res) => route(service, req, res));
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return { server, port: (server.address() as AddressInfo).port, service };
}

function route(service: SlotService, req: IncomingMessage, res: ServerResponse): void {
  const url = req.url ?? '/';
  if (!url.startsWith('/_control/')) return service.arrive(res);
  const { pathname, searchParams } = new URL(url, 'http://upstream');
  const current = service.state();
  const capacity = {
    slots: numberOr(searchParams.get('slots'), current.slots),
    serviceMs: numberOr(searchParams.get('serviceMs'), current.serviceMs),
  };
  if (pathname === '/_control/capacity' && req.method === 'POST') {
    const delayMs = numberOr(searchParams.get('atEpochMs'), 0) - Date.now();
    if (delayMs <= 0) service.setCapacity(capacity);
    else setTimeout(() => service.setCapacity(capacity), delayMs);
  } else if (pathname === '/_control/reset' && req.method === 'POST') {
    service.reset(capacity);
  } else if (pathname !== '/_control/state') {
    res.writeHead(404).end();
    return;
  }
  res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(service.state()));
}

function numberOr(text: string | null, fallback: number): number {
  const n = text === null ? NaN : Number(text);
  return Number.isFinite(n) && n >= 0 ? n : fallback;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({
    options: {
      slots: { type: 'string', default: '8' },
      'service-ms': { type: 'string', default: '20' },
      port: { type: 'string', default: '0' },
    },
  });
  const { port } = await startUpstream(
    { slots: Number(values.slots), serviceMs: Number(values['service-ms']) },
    Number(values.port),
  );
  console.log(`PORT ${port}`);
}
