// PM2 runs the app in cluster mode (2 instances sharing port 3000) and, beside it, one small process
// that keeps the app's limits: the instances' ClusterStores reach it on a Unix socket, so each limit
// is one limit for the host. Start: npx pm2 start examples/pm2/ecosystem.config.cjs
const socket = process.env.LIMITS_SOCKET ?? '/tmp/floodgate-example-limits.sock';
// In this repository floodgate runs from its TypeScript sources; an app that installed floodgate
// from npm needs no node_args.
const node_args = '--conditions=floodgate-source --import tsx';

module.exports = {
  apps: [
    {
      name: 'limits',
      script: `${__dirname}/limits-host.mjs`,
      exec_mode: 'fork',
      instances: 1,
      node_args,
      env: { LIMITS_SOCKET: socket },
    },
    {
      name: 'app',
      script: `${__dirname}/app.mjs`,
      exec_mode: 'cluster',
      instances: 2,
      node_args,
      env: { LIMITS_SOCKET: socket, PORT: process.env.PORT ?? '3000' },
    },
  ],
};
