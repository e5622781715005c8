/**
 * What the primary of `floodgate serve --workers N` and its workers say to each other over node's
 * cluster IPC (beside the limits themselves, which go through `floodgate/cluster`), and how many
 * workers a setting means.
 */
import { availableParallelism } from 'node:os';
import type { ProcessRegistry } from '../dashboard/fleet.js';

/** ReloadResult says whether a reload was applied and, when not, why. */
export interface ReloadResult {
  readonly applied: boolean;
  readonly problems: readonly string[];
}

/** The tag of every message below, so that the cluster store's messages on the same channel pass by. */
export const WORKER_MARK = 'floodgate-worker/1';

/** What a worker tells the primary. */
export type FromWorker =
  | { readonly w: typeof WORKER_MARK; readonly kind: 'listening'; readonly port: number; readonly adminPort?: number }
  | { readonly w: typeof WORKER_MARK; readonly kind: 'ready' | 'unready' }
  | { readonly w: typeof WORKER_MARK; readonly kind: 'reload-all'; readonly id: number; readonly why: string }
  | { readonly w: typeof WORKER_MARK; readonly kind: 'reloaded'; readonly id: number; readonly result: ReloadResult }
  | {
      readonly w: typeof WORKER_MARK;
      readonly kind: 'registry';
      readonly id: number;
      readonly op: 'publish' | 'entries' | 'remove';
      readonly args: readonly string[];
    };

/** What the primary tells a worker. */
export type ToWorker =
  | { readonly w: typeof WORKER_MARK; readonly kind: 'reload'; readonly id: number; readonly why: string }
  | {
      readonly w: typeof WORKER_MARK;
      readonly kind: 'reload-all-done';
      readonly id: number;
      readonly result: ReloadResult;
    }
  | { readonly w: typeof WORKER_MARK; readonly kind: 'shutdown'; readonly now: boolean }
  | { readonly w: typeof WORKER_MARK; readonly kind: 'cut' }
  | { readonly w: typeof WORKER_MARK; readonly kind: 'registry-done'; readonly id: number; readonly value: unknown };

/** isWorkerMessage tells the messages above apart from anything else on the channel. */
export function isWorkerMessage<T extends FromWorker | ToWorker>(message: unknown): message is T {
  return typeof message === 'object' && message !== null && (message as { w?: unknown }).w === WORKER_MARK;
}

/** workerCount returns how many workers a `workers` setting means: `auto` is one a core. */
export function workerCount(setting: number | 'auto'): number {
  return setting === 'auto' ? Math.max(1, availableParallelism()) : setting;
}

/** WorkerRole is what a gateway running as one of several workers knows of its place. */
export interface WorkerRole {
  /** 1 for the first worker forked, counting up (a replacement takes a new number). */
  readonly index: number;
  /** How many workers serve the listener. */
  readonly count: number;
}

/**
 * PrimaryLink is a worker's side of the conversation: it tells the primary what happened, asks it
 * to reload every worker, and keeps the dashboard's process registry in the primary.
 */
export class PrimaryLink {
  private nextId = 1;
  private readonly waiting = new Map<number, (value: unknown) => void>();

  constructor(private readonly send: (message: FromWorker) => void) {}

  /** tell sends a message that needs no answer. */
  tell(message: { kind: 'listening'; port: number; adminPort?: number } | { kind: 'ready' | 'unready' }): void {
    this.send({ w: WORKER_MARK, ...message } as FromWorker);
  }

  /** reloadAll asks the primary to reload every worker, and resolves to the combined result. */
  reloadAll(why: string): Promise<ReloadResult> {
    return this.ask((id) => ({ w: WORKER_MARK, kind: 'reload-all', id, why })) as Promise<ReloadResult>;
  }

  /** registry is the dashboard's process registry, kept by the primary for every worker. */
  readonly registry: ProcessRegistry = {
    publish: async (id, entry) => void (await this.registryCall('publish', [id, entry])),
    entries: async () => (await this.registryCall('entries', [])) as Record<string, string>,
    remove: async (ids) => void (await this.registryCall('remove', [...ids])),
  };

  /** answered takes the primary's answers to this link's questions; false for any other message. */
  answered(message: ToWorker): boolean {
    if (message.kind !== 'reload-all-done' && message.kind !== 'registry-done') return false;
    const resolve = this.waiting.get(message.id);
    this.waiting.delete(message.id);
    resolve?.(message.kind === 'reload-all-done' ? message.result : message.value);
    return true;
  }

  private registryCall(op: 'publish' | 'entries' | 'remove', args: readonly string[]): Promise<unknown> {
    return this.ask((id) => ({ w: WORKER_MARK, kind: 'registry', id, op, args }));
  }

  private ask(message: (id: number) => FromWorker): Promise<unknown> {
    const id = this.nextId++;
    return new Promise((resolve) => {
      this.waiting.set(id, resolve);
      this.send(message(id));
    });
  }
}

/** The overload sections of a route or an upstream, as far as dividing them goes. */
interface Guarded {
  readonly concurrency?: { readonly limit: number; readonly maxQueue: number } | undefined;
  readonly adaptive?:
    | {
        readonly initialLimit?: number | undefined;
        readonly minLimit?: number | undefined;
        readonly maxLimit?: number | undefined;
        readonly maxQueue: number;
      }
    | undefined;
}

/**
 * shareOverload returns `config` as one of `count` workers runs it: each worker guards its share of
 * every concurrency limit, so that the host's requests in flight to an upstream stay within the
 * limit the config states. A static `limit` becomes `floor(limit / count)` (at least 1) and its wait
 * line `ceil(maxQueue / count)`; an adaptive limit learns on each worker from the traffic that worker
 * sends, from `initialLimit` and up to `maxLimit` divided alike (defaults 20 and 1,000; never under
 * `minLimit`). Rate limits
 * are not divided: they are one limit for the host through the shared store.
 */
export function shareOverload<C extends { routes: readonly Guarded[]; upstreams?: readonly Guarded[] | undefined }>(
  config: C,
  count: number,
): C {
  if (count <= 1) return config;
  const part = (n: number): number => Math.max(1, Math.floor(n / count));
  const queue = (n: number): number => Math.ceil(n / count);
  const share = <G extends Guarded>(g: G): G => ({
    ...g,
    ...(g.concurrency === undefined
      ? {}
      : {
          concurrency: { ...g.concurrency, limit: part(g.concurrency.limit), maxQueue: queue(g.concurrency.maxQueue) },
        }),
    ...(g.adaptive === undefined
      ? {}
      : {
          adaptive: {
            ...g.adaptive,
            initialLimit: Math.max(g.adaptive.minLimit ?? 2, part(g.adaptive.initialLimit ?? 20)),
            maxLimit: Math.max(g.adaptive.minLimit ?? 2, part(g.adaptive.maxLimit ?? 1000)),
            maxQueue: queue(g.adaptive.maxQueue),
          },
        }),
  });
  return {
    ...config,
    routes: config.routes.map(share),
    ...(config.upstreams === undefined ? {} : { upstreams: config.upstreams.map(share) }),
  };
}
