import type { ClusterChannel } from '../../src/cluster.js';

/**
 * channelPair returns two ends of an in-process channel: what one sends reaches the other's
 * listeners in a microtask, as a JSON copy (what crosses a real IPC channel or socket).
 */
export function channelPair(): [ClusterChannel, ClusterChannel] {
  const listeners: [Set<(m: unknown) => void>, Set<(m: unknown) => void>] = [new Set(), new Set()];
  const end = (mine: 0 | 1): ClusterChannel => ({
    send(message) {
      const copy: unknown = JSON.parse(JSON.stringify(message));
      queueMicrotask(() => {
        for (const l of listeners[1 - mine]!) l(copy);
      });
    },
    onMessage(listener) {
      listeners[mine].add(listener);
      return () => void listeners[mine].delete(listener);
    },
  });
  return [end(0), end(1)];
}
