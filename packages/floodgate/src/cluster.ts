/**
 * floodgate/cluster: one limit for every process of an app on one host, without Redis. A
 * {@link ClusterStoreHost} keeps the limits (in the primary of node's cluster, the thread that made
 * the worker threads, or a process of its own beside PM2's instances); each worker's
 * {@link ClusterStore} decides from quota leases it takes from the host, so that most decisions
 * send no message at all. See docs/workers.md.
 *
 * @packageDocumentation
 */
export { ClusterStore, type ClusterCounts, type ClusterStoreOptions } from './cluster/cluster-store.js';
export { ClusterStoreHost, type ClusterStoreHostOptions } from './cluster/cluster-host.js';
export {
  listenClusterHost,
  portChannel,
  processChannel,
  serveClusterWorkers,
  socketChannel,
  type ClusterModule,
  type ClusterWorker,
  type IpcEnd,
  type PortEnd,
} from './cluster/channels.js';
export type { ClusterChannel, ClusterNotice, ClusterOp, ClusterReply, ClusterRequest } from './cluster/protocol.js';
