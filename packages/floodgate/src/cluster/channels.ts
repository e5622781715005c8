/**
 * The links a {@link ClusterStore} and its {@link ClusterStoreHost} talk over: node's IPC channel
 * (a cluster worker and its primary), a worker thread's MessagePort, and a Unix socket (processes
 * that a manager such as PM2 starts, with the host as a process of its own).
 */
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { FloodgateError } from '../core/errors.js';
import type { ClusterStoreHost } from './cluster-host.js';
import { isRequest, type ClusterChannel } from './protocol.js';

/** IpcEnd is what {@link processChannel} needs of a process (this one, a cluster worker, a forked child). */
export interface IpcEnd {
  /** send writes a message to the other end of the IPC channel; absent without one. */
  send?(message: unknown): unknown;
  /** on adds a listener for the channel's messages. */
  on(event: 'message', listener: (message: unknown) => void): unknown;
  /** off removes a listener added with `on`. */
  off(event: 'message', listener: (message: unknown) => void): unknown;
}

/**
 * processChannel is the IPC channel of `end` (default this process, to its parent): what a worker
 * of node's cluster module, or a child forked with an IPC channel, uses.
 *
 * @throws FloodgateError `INVALID_OPTION` when the process has no IPC channel (it was not forked).
 */
export function processChannel(end: IpcEnd = process as unknown as IpcEnd): ClusterChannel {
  if (typeof end.send !== 'function')
    throw new FloodgateError(
      'INVALID_OPTION',
      'ClusterStore: this process has no IPC channel to a host (it is not a cluster worker or a forked child); pass channel: portChannel(parentPort) in a worker thread, or socketChannel(path) for a host on a Unix socket',
      'ClusterStore.channel',
    );
  return {
    send: (message) => void end.send!(message),
    onMessage(listener) {
      end.on('message', listener);
      return () => void end.off('message', listener);
    },
  };
}

/** PortEnd is what {@link portChannel} needs of a MessagePort or a Worker. */
export interface PortEnd {
  /** postMessage sends a message to the other thread. */
  postMessage(message: unknown): void;
  /** on adds a listener for the other thread's messages. */
  on(event: 'message', listener: (message: unknown) => void): unknown;
  /** off removes a listener added with `on`. */
  off(event: 'message', listener: (message: unknown) => void): unknown;
}

/**
 * portChannel is a channel over a worker thread's port: `parentPort` in the worker, the `Worker`
 * object in the thread that made it (for {@link ClusterStoreHost.attach}).
 */
export function portChannel(port: PortEnd): ClusterChannel {
  return {
    send: (message) => port.postMessage(message),
    onMessage(listener) {
      port.on('message', listener);
      return () => void port.off('message', listener);
    },
  };
}

/** ClusterModule is what {@link serveClusterWorkers} needs of node's `cluster` module. */
export interface ClusterModule {
  /** The live workers, by id (the host tells each of a reset or a refund). */
  readonly workers?: Record<string, ClusterWorker | undefined>;
  /** on adds a listener for every worker's messages. */
  on(event: 'message', listener: (worker: ClusterWorker, message: unknown) => void): unknown;
  /** off removes a listener added with `on`. */
  off(event: 'message', listener: (worker: ClusterWorker, message: unknown) => void): unknown;
}

/**
 * sendTo sends `message` to `worker` unless it has gone: a worker killed while its call was answered
 * must not take the primary with it (a failed send, given a callback, is not an 'error' event).
 */
function sendTo(worker: ClusterWorker, message: unknown): void {
  if (worker.isConnected()) worker.send(message, ignoreSendError);
}

function ignoreSendError(): void {}

/** ClusterWorker is what the host needs of one worker of node's `cluster` module. */
export interface ClusterWorker {
  /** send writes a message to the worker; a failure goes to `callback`, when given. */
  send(message: unknown, callback?: (error: Error | null) => void): unknown;
  /** isConnected says whether the worker's IPC channel is still open. */
  isConnected(): boolean;
}

/**
 * serveClusterWorkers makes `host` answer every worker of node's `cluster` module, those running
 * and those forked later, and returns a function that stops. Call it in the primary.
 */
export function serveClusterWorkers(host: ClusterStoreHost, cluster: ClusterModule): () => void {
  const listener = (worker: ClusterWorker, message: unknown): void => {
    if (isRequest(message)) sendTo(worker, host.answer(message));
  };
  cluster.on('message', listener);
  const stopNotices = host.onNotice((notice) => {
    for (const worker of Object.values(cluster.workers ?? {})) if (worker !== undefined) sendTo(worker, notice);
  });
  return () => {
    cluster.off('message', listener);
    stopNotices();
  };
}

/**
 * Lines reads newline-delimited JSON from a socket; a line that is not JSON is passed on as a
 * string, for the receiver to ignore.
 */
function onLines(socket: Socket, listener: (message: unknown) => void): () => void {
  let buffered = '';
  const onData = (chunk: string): void => {
    buffered += chunk;
    let nl: number;
    while ((nl = buffered.indexOf('\n')) >= 0) {
      const line = buffered.slice(0, nl);
      buffered = buffered.slice(nl + 1);
      let message: unknown = line;
      try {
        message = JSON.parse(line);
      } catch {
        // not ours: the receiver ignores a string
      }
      listener(message);
    }
  };
  socket.setEncoding('utf8');
  socket.on('data', onData);
  return () => void socket.off('data', onData);
}

/**
 * listenClusterHost serves `host` on the Unix socket (or Windows pipe) at `path`, one line of JSON a
 * message; it resolves to the listening server. A stale socket file must be removed first.
 */
export function listenClusterHost(host: ClusterStoreHost, path: string): Promise<Server> {
  const server = createServer((socket) => {
    onLines(socket, (message) => {
      if (isRequest(message) && socket.writable) socket.write(`${JSON.stringify(host.answer(message))}\n`);
    });
    socket.on('error', () => socket.destroy());
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(path, () => {
      server.off('error', reject);
      resolve(server);
    });
  });
}

/**
 * socketChannel connects to a host served by {@link listenClusterHost} at `path`, and connects
 * again, every `retryMs` (default 100), whenever the connection is lost. A call sent while there is
 * no connection fails (the store's `onError` answers it).
 */
export function socketChannel(path: string, retryMs = 100): ClusterChannel {
  const listeners = new Set<(message: unknown) => void>();
  let socket: Socket | undefined;
  let connected = false;
  let closed = false;
  const connect = (): void => {
    const s = createConnection(path);
    socket = s;
    s.on('connect', () => (connected = true));
    onLines(s, (message) => {
      for (const l of listeners) l(message);
    });
    s.on('error', () => s.destroy());
    s.on('close', () => {
      connected = false;
      if (!closed) setTimeout(connect, retryMs).unref();
    });
    s.unref();
  };
  connect();
  return {
    send(message) {
      if (!connected || socket === undefined) throw new Error(`not connected to ${path}`);
      socket.write(`${JSON.stringify(message)}\n`);
    },
    onMessage(listener) {
      listeners.add(listener);
      return () => void listeners.delete(listener);
    },
    close() {
      closed = true;
      socket?.destroy();
    },
  };
}
