// One instance of the app: every instance PM2 starts shares the limit through the limits host.
import { createServer } from 'node:http';
import { Limiter, fixedWindow } from 'floodgate';
import { ClusterStore, socketChannel } from 'floodgate/cluster';

const store = new ClusterStore({ channel: socketChannel(process.env.LIMITS_SOCKET), onError: 'fail-closed' });
const limiter = new Limiter({ policy: fixedWindow({ limit: 10, windowMs: 60_000 }), store });

createServer(async (req, res) => {
  const decision = await limiter.consume('whole-app');
  res.writeHead(decision.allowed ? 200 : 429, { 'x-instance': String(process.pid) });
  res.end(decision.allowed ? 'hello\n' : 'slow down\n');
}).listen(Number(process.env.PORT), '127.0.0.1', () => console.log(`instance ${process.pid} listening`));
