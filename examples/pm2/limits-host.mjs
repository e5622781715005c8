// The process that keeps the limits of every instance of the app, on a Unix socket.
import { rmSync } from 'node:fs';
import { ClusterStoreHost, listenClusterHost } from 'floodgate/cluster';

const path = process.env.LIMITS_SOCKET;
rmSync(path, { force: true }); // a socket left by an earlier run
const server = await listenClusterHost(new ClusterStoreHost(), path);
console.log(`limits host listening on ${path}`);
process.on('SIGINT', () => server.close(() => process.exit(0)));
