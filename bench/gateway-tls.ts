/**
 * What TLS and HTTP/2 cost the gateway, against plain HTTP and against nginx with TLS:
 * `node --conditions=floodgate-source --import tsx bench/gateway-tls.ts [--requests 5000] [--rounds 3] [--concurrency 32]`
 *
 * Subjects, all in front of one upstream (a node:http server in this process answering `ok`), each
 * with one limit per client address that admits everything (floodgate: a token bucket; nginx:
 * `limit_req`): floodgate over HTTP/1.1, over HTTPS/1.1 and over HTTP/2 (one listener serving both),
 * and nginx (one worker) over HTTP/1.1, HTTPS/1.1 and HTTP/2. The clients are node's own, in this
 * process, with `concurrency` requests in flight: HTTP/1.1 on keep-alive connections, HTTP/2 as
 * streams of one session. The figure is the CPU time of the proxy's processes per request (from
 * /proc, user + system), the steadier figure on a shared machine; the median of the rounds, which
 * alternate between subjects. Certificates are made by openssl for the run. Nothing is asserted.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { Agent as HttpAgent, createServer, request as httpRequest } from 'node:http';
import { connect as h2connect } from 'node:http2';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { AddressInfo } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { cpuTicks, median } from './gateway/measure.js';
import { NGINX } from './gateway/nginx.js';
import { freePort, startProcess } from './gateway/processes.js';
import { ratio, table } from './support/format.js';

const { values: flags } = parseArgs({
  options: {
    requests: { type: 'string', default: '5000' },
    rounds: { type: 'string', default: '3' },
    concurrency: { type: 'string', default: '32' },
  },
});
const REQUESTS = Number(flags.requests);
const CONCURRENCY = Number(flags.concurrency);
const TICK_US = 1_000_000 / Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim() || 100);
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const MAIN = join(ROOT, 'packages', 'server', 'src', 'cli', 'main.ts');

type Protocol = 'http' | 'https' | 'h2';

/** Subject is one proxy and protocol: how to send it a request, and whose CPU to read. */
interface Subject {
  readonly name: string;
  readonly protocol: Protocol;
  readonly pid: number;
  readonly port: number;
}

/** Sends `REQUESTS` requests with `CONCURRENCY` in flight; resolves once all are answered (each must be 200). */
async function load(subject: Subject, ca: string): Promise<void> {
  let next = 0;
  const one = oneRequest(subject, ca);
  const worker = async (): Promise<void> => {
    while (next < REQUESTS) {
      next++;
      const status = await one.send();
      if (status !== 200) throw new Error(`${subject.name} answered ${status}`);
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  one.close();
}

function oneRequest(subject: Subject, ca: string): { send(): Promise<number>; close(): void } {
  const url = `${subject.protocol === 'http' ? 'http' : 'https'}://127.0.0.1:${subject.port}/bench`;
  if (subject.protocol === 'h2') {
    const session = h2connect(url, { ca: [ca] });
    session.on('error', () => {});
    return {
      send: () =>
        new Promise((resolve, reject) => {
          const stream = session.request({ ':path': '/bench' });
          let status = 0;
          stream.on('response', (h) => (status = Number(h[':status'])));
          stream.on('data', () => {});
          stream.on('end', () => resolve(status));
          stream.on('error', reject);
          stream.end();
        }),
      close: () => session.close(),
    };
  }
  const agent =
    subject.protocol === 'http'
      ? new HttpAgent({ keepAlive: true, maxSockets: CONCURRENCY })
      : new HttpsAgent({ keepAlive: true, maxSockets: CONCURRENCY, ca: [ca] });
  const send = subject.protocol === 'http' ? httpRequest : httpsRequest;
  return {
    send: () =>
      new Promise((resolve, reject) => {
        const req = send(url, { agent }, (res) => {
          res.on('data', () => {});
          res.on('end', () => resolve(res.statusCode ?? 0));
        });
        req.on('error', reject);
        req.end();
      }),
    close: () => agent.destroy(),
  };
}

/** The CPU time per request, in µs, of one loaded round. */
async function measure(subject: Subject, ca: string): Promise<number> {
  const before = cpuTicks(subject.pid);
  await load(subject, ca);
  return ((cpuTicks(subject.pid) - before) * TICK_US) / REQUESTS;
}

function nginxConf(prefix: string, ports: Record<Protocol, number>, upstreamPort: number, tls: string[]): string {
  return `worker_processes 1;
pid ${prefix}/nginx.pid;
error_log ${prefix}/error.log crit;
events { worker_connections 4096; }
http {
  access_log off;
  keepalive_requests 1000000;
  client_body_temp_path ${prefix}/body; proxy_temp_path ${prefix}/proxy; fastcgi_temp_path ${prefix}/fcgi;
  uwsgi_temp_path ${prefix}/uwsgi; scgi_temp_path ${prefix}/scgi;
  limit_req_zone $binary_remote_addr zone=perip:10m rate=1000000r/s;
  upstream backend { server 127.0.0.1:${upstreamPort}; keepalive 64; }
  ssl_certificate ${tls[0]}; ssl_certificate_key ${tls[1]};
  server {
    listen 127.0.0.1:${ports.http};
    listen 127.0.0.1:${ports.https} ssl;
    listen 127.0.0.1:${ports.h2} ssl http2;
    location / {
      limit_req zone=perip burst=1000000 nodelay;
      proxy_pass http://backend;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header X-Forwarded-For $remote_addr;
      proxy_set_header X-Forwarded-Proto $scheme;
    }
  }
}
`;
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'floodgate-bench-tls-'));
  const children: ChildProcess[] = [];
  const upstream = createServer((_req, res) => res.end('ok'));
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  const upstreamPort = (upstream.address() as AddressInfo).port;
  try {
    const [cert, key] = [join(dir, 'cert.pem'), join(dir, 'key.pem')];
    execFileSync(
      'openssl',
      [
        ...['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1'],
        ...['-subj', '/CN=bench', '-addext', 'subjectAltName=IP:127.0.0.1', '-keyout', key, '-out', cert],
      ],
      { stdio: 'ignore' },
    );
    const ca = (await import('node:fs')).readFileSync(cert, 'utf8');
    const rule = `    rules:
      - name: per-client
        policy: { algorithm: tokenBucket, capacity: 1000000000, refillPerSecond: 1000000000 }
        key: { type: ip }`;
    const subjects: Subject[] = [];
    for (const [name, listen] of [
      ['floodgate http', ''],
      ['floodgate tls', `listen: { tls: { certFile: ${cert}, keyFile: ${key} } }\n`],
    ] as const) {
      const file = join(dir, `${name.replace(' ', '-')}.yaml`);
      await writeFile(
        file,
        `${listen}routes:\n  - name: bench\n    upstream: http://127.0.0.1:${upstreamPort}\n${rule}\n`,
      );
      const gw = await startProcess(name, undefined, process.execPath, [
        ...['--conditions=floodgate-source', '--import', 'tsx', MAIN, 'serve', '--config', file],
        ...['--port', '0', '--admin-port', '0', '--no-watch'],
      ]);
      children.push(gw.child);
      if (listen === '')
        subjects.push({ name: 'floodgate HTTP/1.1', protocol: 'http', pid: gw.child.pid!, port: gw.port });
      else
        subjects.push(
          { name: 'floodgate HTTPS/1.1', protocol: 'https', pid: gw.child.pid!, port: gw.port },
          { name: 'floodgate HTTP/2', protocol: 'h2', pid: gw.child.pid!, port: gw.port },
        );
    }
    const ports = { http: await freePort(), https: await freePort(), h2: await freePort() };
    await writeFile(join(dir, 'nginx.conf'), nginxConf(dir, ports, upstreamPort, [cert, key]));
    const nginx = spawn(
      NGINX,
      ['-p', dir, '-e', join(dir, 'error.log'), '-c', join(dir, 'nginx.conf'), '-g', 'daemon off;'],
      {
        stdio: 'ignore',
      },
    );
    children.push(nginx);
    await new Promise((r) => setTimeout(r, 500));
    subjects.push(
      { name: 'nginx HTTP/1.1', protocol: 'http', pid: nginx.pid!, port: ports.http },
      { name: 'nginx HTTPS/1.1', protocol: 'https', pid: nginx.pid!, port: ports.https },
      { name: 'nginx HTTP/2', protocol: 'h2', pid: nginx.pid!, port: ports.h2 },
    );
    for (const s of subjects) await load(s, ca); // warm-up, unrecorded
    const readings = new Map<string, number[]>(subjects.map((s) => [s.name, []]));
    for (let round = 0; round < Number(flags.rounds); round++)
      for (const s of subjects) readings.get(s.name)!.push(await measure(s, ca));
    const us = new Map([...readings].map(([name, xs]) => [name, median(xs)]));
    const base = us.get('floodgate HTTP/1.1')!;
    const rows = subjects.map((s) => {
      const own = us.get(s.name)!;
      const nginxSame = us.get(`nginx ${s.name.split(' ')[1]}`)!;
      return [
        s.name,
        own.toFixed(0),
        ratio(own / base),
        ratio(own / nginxSame),
        readings
          .get(s.name)!
          .map((x) => x.toFixed(0))
          .join(' '),
      ];
    });
    console.log(
      `${REQUESTS} requests a round, ${CONCURRENCY} in flight, ${flags.rounds} rounds; load average ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}`,
    );
    console.log(
      table(
        ['subject', 'CPU µs/request', 'vs floodgate HTTP/1.1', 'vs nginx, same protocol', 'rounds'],
        rows,
        new Set([1, 2, 3]),
      ),
    );
  } finally {
    for (const c of children) c.kill('SIGTERM');
    upstream.close();
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
