/**
 * One process of data planes for bench/rlqs.ts: `streams` RLQS streams spread over `channels`
 * grpc-js channels, each reporting the same `buckets` buckets once a second (the streams' phases
 * spread evenly over the second). Once every stream has had its first answer and no push (a
 * redistribution after the joins) has arrived for 2 s, it prints `ready`;
 * on a `go` line on stdin it measures, for each report sent in the next `seconds`, the delay until
 * its answer (the response carrying one action per bucket), and then prints them as one JSON line.
 *
 *   node --conditions=floodgate-source --import tsx bench/rlqs-clients.ts <port> <streams> <channels> <buckets> <seconds>
 */
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import * as grpc from '@grpc/grpc-js';
import { loadRateLimitQuotaService } from '../packages/server/src/ratelimit/quota/proto.js';

const [port, streams, channels, buckets, seconds] = process.argv.slice(2).map(Number) as [
  number,
  number,
  number,
  number,
  number,
];
const Ctor = loadRateLimitQuotaService();
const clients = Array.from(
  { length: channels },
  (_, i) =>
    new Ctor(`127.0.0.1:${port}`, grpc.credentials.createInsecure(), { 'grpc.channel_id': i } as grpc.ChannelOptions),
);
let goAt = Infinity;
let endAt = Infinity;
let answered = 0;
const delays: number[] = [];
let pushes = 0;
let lastPushAt = 0;
let answers = 0;
let failures = 0;

function openStream(i: number): void {
  const client = clients[i % channels] as unknown as {
    StreamRateLimitQuotas(): grpc.ClientDuplexStream<unknown, { bucket_action: unknown[] }>;
  };
  const call = client.StreamRateLimitQuotas();
  const sentAt: number[] = [];
  let first = false;
  call.on('data', (response) => {
    if (response.bucket_action.length !== buckets) {
      pushes++;
      lastPushAt = performance.now();
      return;
    }
    // The server answers a stream's reports in order, and while the client is slow to read it
    // merges waiting answers into one: an answer covers every report still outstanding, and its
    // delay is counted once, from the oldest of them (an upper bound for the others).
    const at = sentAt[0];
    const covered = sentAt.length;
    sentAt.length = 0;
    if (!first) {
      first = true;
      if (++answered === streams) readyOnceQuiet();
    }
    const now = performance.now();
    if (now >= goAt && now < endAt) answers += covered;
    if (at !== undefined && at >= goAt && at < endAt) delays.push(now - at);
  });
  call.on('error', () => failures++);
  const report = (): void => {
    sentAt.push(performance.now());
    call.write({
      domain: 'bench',
      bucket_quota_usages: Array.from({ length: buckets }, (_, b) => ({
        bucket_id: { bucket: { name: `b${b}` } },
        time_elapsed: { seconds: 1 },
        num_requests_allowed: 10 + ((i * 7 + b) % 90),
        num_requests_denied: 0,
      })),
    });
  };
  setTimeout(
    () => {
      report();
      setInterval(report, 1000);
    },
    (1000 * i) / streams,
  );
}

/** readyOnceQuiet prints `ready` once no push has arrived for 2 s: the joins' redistributions are over. */
function readyOnceQuiet(): void {
  const timer = setInterval(() => {
    if (performance.now() - lastPushAt < 2000) return;
    clearInterval(timer);
    process.stdout.write('ready\n');
  }, 200);
}

for (let i = 0; i < streams; i++) openStream(i);
process.stdin.setEncoding('utf8');
const lag = monitorEventLoopDelay({ resolution: 10 });
process.stdin.once('data', () => {
  lag.enable();
  goAt = performance.now();
  endAt = goAt + seconds * 1000;
  pushes = 0;
  setTimeout(
    () => {
      process.stdout.write(
        `${JSON.stringify({ delays, answers, pushes, failures, lagP99Ms: lag.percentile(99) / 1e6 })}\n`,
      );
      process.exit(0);
    },
    seconds * 1000 + 2000,
  );
});
