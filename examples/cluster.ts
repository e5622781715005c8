/**
 * One limit for an app of several processes on one host, with no Redis: node's cluster module runs
 * two workers, the primary keeps the limits (a ClusterStoreHost), and each worker's ClusterStore
 * decides from units it leases from there. Both workers ask as fast as they can; together they
 * admit the limit, once.
 */
import cluster from 'node:cluster';
import { Limiter, fixedWindow } from 'floodgate';
import { ClusterStore, ClusterStoreHost, serveClusterWorkers } from 'floodgate/cluster';

const LIMIT = 1_000;
const ASKS_PER_WORKER = 20_000;

if (cluster.isPrimary) {
  const host = new ClusterStoreHost();
  serveClusterWorkers(host, cluster);
  let admitted = 0;
  let decisions = 0;
  let finished = 0;
  cluster.on('message', (_worker, message: { admitted?: number; decisions?: number }) => {
    if (message.admitted === undefined) return;
    admitted += message.admitted;
    decisions += message.decisions!;
    if (++finished === 2) {
      console.log(`2 workers, ${decisions} decisions: ${admitted} admitted of a limit of ${LIMIT}`);
      console.log(`messages to the primary: ${host.calls} (${(host.calls / decisions).toFixed(3)} a decision)`);
      host.close();
      for (const worker of Object.values(cluster.workers ?? {})) worker?.kill();
    }
  });
  cluster.fork();
  cluster.fork();
} else {
  const store = new ClusterStore();
  const limiter = new Limiter({ policy: fixedWindow({ limit: LIMIT, windowMs: 60_000 }), store });
  let admitted = 0;
  for (let i = 0; i < ASKS_PER_WORKER; i++) if ((await limiter.consume('global')).allowed) admitted++;
  process.send!({ admitted, decisions: ASKS_PER_WORKER });
}
