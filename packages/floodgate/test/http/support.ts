/** Shared helpers of the HTTP tests: loopback servers, request views, loggers and odd stores. */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Algorithm, Decision, PolicyStore, Store } from '../../src/index.js';
import { MemoryStore } from '../../src/index.js';
import { RequestView, type ClientIpResolver, type Logger } from '../../src/http/index.js';

/** listen starts `server` on a free loopback port and returns its base URL. */
export async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** close stops `server`, dropping idle keep-alive connections. */
export async function close(server: Server): Promise<void> {
  server.closeAllConnections();
  await new Promise<void>((resolve, reject) => server.close((err) => (err ? reject(err) : resolve())));
}

/** FakeRequest describes a request for {@link FakeView}. */
export interface FakeRequest {
  remote?: string | undefined;
  headers?: Record<string, string>;
  method?: string;
  route?: string;
}

/** FakeView is a request view with no server behind it, for unit tests of identities and the gate. */
export class FakeView extends RequestView<FakeRequest> {
  constructor(resolver: ClientIpResolver, request: FakeRequest) {
    super(request, resolver);
  }

  get method(): string {
    return this.raw.method ?? 'GET';
  }

  get path(): string {
    return this.raw.route ?? '/';
  }

  get route(): string {
    return this.raw.route ?? '/';
  }

  header(name: string): string | undefined {
    return this.raw.headers?.[name];
  }

  protected remoteAddress(): string | undefined {
    return 'remote' in this.raw ? this.raw.remote : '127.0.0.1';
  }
}

/** memoryLogger returns a logger that keeps its messages. */
export function memoryLogger(): Logger & { messages: string[] } {
  const messages: string[] = [];
  return { messages, warn: (message: string) => void messages.push(message) };
}

/**
 * asyncStore wraps a memory store so that every call answers with a promise, as Redis would: on the
 * next turn of the event loop, or after `delayMs` when given (a store across a network).
 */
export function asyncStore(inner: Store = new MemoryStore(), delayMs?: number): Store {
  const defer = (f: () => void): unknown => (delayMs === undefined ? setImmediate(f) : setTimeout(f, delayMs));
  return {
    bind(algorithm: Algorithm): PolicyStore {
      const table = inner.bind(algorithm);
      const later = <T>(f: () => T): Promise<T> => new Promise((resolve) => defer(() => resolve(f())));
      return {
        synchronous: false,
        consume: (key, cost, nowMs) => later(() => table.consume(key, cost, nowMs) as Decision),
        peek: (key, cost, nowMs) => later(() => table.peek(key, cost, nowMs) as Decision),
        refund: (key, cost, nowMs) => later(() => void table.refund(key, cost, nowMs)),
        reset: (key) => later(() => void table.reset(key)),
      };
    },
  };
}

/** failingStore returns a store whose every call rejects, as an unreachable Redis would. */
export function failingStore(): Store {
  const fail = (): Promise<never> => Promise.reject(new Error('connection refused'));
  return { bind: () => ({ synchronous: false, consume: fail, peek: fail, refund: fail, reset: fail }) };
}
