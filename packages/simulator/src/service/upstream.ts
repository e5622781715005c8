import { RANK, type EventQueue } from './event-queue.js';
import { ServiceTime } from './service-time.js';
import type { ServiceSpec } from './spec.js';

/** Job is one call as the service sees it: where its service time falls in the distribution. */
export interface Job {
  /** The call's quantile in the service-time distribution, in (0, 1). */
  readonly quantile: number;
}

/**
 * Upstream is the service behind the protection: `slots` calls worked on at once, the rest in
 * one unbounded first-in, first-out queue. It never learns that a client left: work whose client
 * timed out is still done, in its turn, which is what makes an unprotected service collapse. Its
 * slots and service time change at the spec's capacity steps; fewer slots take effect as calls
 * finish (nothing is cut short), more start queued calls at once.
 */
export class Upstream<J extends Job> {
  private slots: number;
  private time: ServiceTime;
  private readonly queue: J[] = [];
  private head = 0;
  private busy = 0;
  private peak = 0;

  /** Creates the service of `spec` on `events`, scheduling its capacity steps; `onDone` hears each finished job. */
  constructor(
    spec: ServiceSpec,
    private readonly events: EventQueue,
    private readonly onDone: (job: J, atMs: number) => void,
  ) {
    this.slots = spec.slots;
    this.time = new ServiceTime(spec.serviceMs);
    for (const step of spec.capacity) {
      events.push(step.atMs, RANK.capacity, (atMs) => {
        if (step.slots !== undefined) this.slots = step.slots;
        if (step.serviceMs !== undefined) this.time = new ServiceTime(step.serviceMs);
        this.startWaiting(atMs);
      });
    }
  }

  /** backlog returns the calls in the service: queued and being worked on, abandoned ones included. */
  get backlog(): number {
    return this.busy + this.queue.length - this.head;
  }

  /** peakBacklog returns the most calls the service held at once. */
  get peakBacklog(): number {
    return this.peak;
  }

  /** submit queues `job` at `atMs`, starting it at once when a slot is free. */
  submit(job: J, atMs: number): void {
    this.queue.push(job);
    if (this.backlog > this.peak) this.peak = this.backlog;
    this.startWaiting(atMs);
  }

  private startWaiting(atMs: number): void {
    while (this.busy < this.slots && this.head < this.queue.length) {
      const job = this.queue[this.head++]!;
      this.busy++;
      this.events.push(atMs + this.time.drawMs(job.quantile), RANK.answer, (doneMs) => this.finish(job, doneMs));
    }
    // Drop the served part of the queue now and then, so it does not grow without end.
    if (this.head > 4096 && this.head * 2 > this.queue.length) {
      this.queue.splice(0, this.head);
      this.head = 0;
    }
  }

  private finish(job: J, atMs: number): void {
    this.busy--;
    this.onDone(job, atMs);
    this.startWaiting(atMs);
  }
}
