/**
 * One limit for the processes of a node cluster app, library side: floodgate's ClusterStore (leases
 * from the primary's ClusterStoreHost) against rate-limiter-flexible's RateLimiterCluster (one IPC
 * round trip to the primary per decision), the same work in the same run: 2 workers deciding as
 * fast as they can, one after another, on one key under a fixed window of LIMIT per second (what
 * RateLimiterCluster's `points`/`duration` is). Rounds alternate the two. For each: decisions per
 * second (both workers together), messages to the primary per decision, CPU per decision (the
 * primary and the workers, from their own process.cpuUsage), and, for floodgate, the most admitted
 * in any one window against the limit (a correctness check; floodgate's windows are whole seconds
 * of the clock, which is how they are counted here; RateLimiterCluster's start at a key's first
 * request, so they are not).
 *
 *   node --conditions=floodgate-source --import tsx bench/cluster.ts [--rounds 5] [--seconds 3] [--limit 10000]
 */
import { spawnSync } from 'node:child_process';
import cluster from 'node:cluster';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '5' },
    seconds: { type: 'string', default: '3' },
    limit: { type: 'string', default: '10000' },
    subject: { type: 'string' },
  },
});
const LIMIT = Number(values.limit);
const SECONDS = Number(values.seconds);
const WORKERS = 2;

interface Report {
  decisions: number;
  admittedByWindow: Record<string, number>;
  cpuUs: number;
}

interface Outcome {
  subject: string;
  perSecond: number;
  messagesPerDecision: number;
  cpuNsPerDecision: number;
  mostInAWindow: number;
}

if (values.subject !== undefined) await runSubject(values.subject);
else main();

function main(): void {
  const rounds = Number(values.rounds);
  const results: Record<string, Outcome[]> = { floodgate: [], rlf: [] };
  for (let r = 0; r < rounds; r++) {
    for (const subject of r % 2 === 0 ? ['floodgate', 'rlf'] : ['rlf', 'floodgate']) {
      const child = spawnSync(
        process.execPath,
        [
          ...process.execArgv,
          fileURLToPath(import.meta.url),
          '--subject',
          subject,
          '--seconds',
          String(SECONDS),
          '--limit',
          String(LIMIT),
        ],
        { encoding: 'utf8', timeout: (SECONDS + 30) * 1000 },
      );
      const line = child.stdout.trim().split('\n').at(-1) ?? '';
      if (child.status !== 0 || !line.startsWith('{')) throw new Error(`${subject} failed: ${child.stderr}`);
      results[subject]!.push(JSON.parse(line) as Outcome);
    }
  }
  const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const fmt = (xs: number[], digits = 0): string =>
    `${median(xs).toFixed(digits)} (rounds ${Math.min(...xs).toFixed(digits)}-${Math.max(...xs).toFixed(digits)})`;
  console.log(
    `2 workers, one key, a fixed window of ${LIMIT}/s, ${SECONDS} s a round, ${rounds} rounds each, alternating`,
  );
  for (const [subject, rs] of Object.entries(results)) {
    console.log(
      `${subject.padEnd(10)} decisions/s ${fmt(rs.map((x) => x.perSecond))}  messages/decision ${fmt(
        rs.map((x) => x.messagesPerDecision),
        4,
      )}  CPU ns/decision ${fmt(rs.map((x) => x.cpuNsPerDecision))}${subject === 'floodgate' ? `  most admitted in a window ${Math.max(...rs.map((x) => x.mostInAWindow))} of ${LIMIT}` : ''}`,
    );
  }
  const ratios = results['floodgate']!.map((f, i) => f.perSecond / results['rlf']![i]!.perSecond);
  console.log(`floodgate / rate-limiter-flexible, decisions per second, round by round: ${fmt(ratios, 1)}x`);
}

async function runSubject(subject: string): Promise<void> {
  if (cluster.isPrimary) {
    const messages = await primary(subject);
    const reports: Report[] = [];
    const cpuBefore = process.cpuUsage();
    cluster.on('message', (_w, m: Report & { report?: boolean }) => {
      if (m.report === true) reports.push(m);
    });
    const start = Date.now() + 1500; // every worker starts deciding at this instant
    for (let i = 0; i < WORKERS; i++) cluster.fork({ START_AT: String(start), SUBJECT: subject });
    await new Promise<void>((resolve) =>
      cluster.on('exit', () => Object.keys(cluster.workers ?? {}).length === 0 && resolve()),
    );
    const cpu = process.cpuUsage(cpuBefore);
    const decisions = reports.reduce((a, r) => a + r.decisions, 0);
    const windows: Record<string, number> = {};
    for (const r of reports)
      for (const [w, n] of Object.entries(r.admittedByWindow)) windows[w] = (windows[w] ?? 0) + n;
    const cpuUs = reports.reduce((a, r) => a + r.cpuUs, cpu.user + cpu.system);
    console.log(
      JSON.stringify({
        subject,
        perSecond: decisions / SECONDS,
        messagesPerDecision: messages() / decisions,
        cpuNsPerDecision: (cpuUs * 1000) / decisions,
        mostInAWindow: Math.max(...Object.values(windows)),
      } satisfies Outcome),
    );
    process.exit(0);
  }
  const decide = await workerDecide(process.env['SUBJECT']!);
  const startAt = Number(process.env['START_AT']);
  while (Date.now() < startAt) await new Promise((r) => setTimeout(r, 5));
  const cpuBefore = process.cpuUsage();
  const endAt = startAt + SECONDS * 1000;
  const admittedByWindow: Record<string, number> = {};
  let decisions = 0;
  for (let now = Date.now(); now < endAt; now = Date.now()) {
    for (let i = 0; i < 64; i++) {
      decisions++;
      if (await decide()) {
        const w = String(Math.floor(Date.now() / 1000));
        admittedByWindow[w] = (admittedByWindow[w] ?? 0) + 1;
      }
    }
  }
  const cpu = process.cpuUsage(cpuBefore);
  process.send!({ report: true, decisions, admittedByWindow, cpuUs: cpu.user + cpu.system }, () => process.exit(0));
}

/** Sets up the primary's side of `subject` and returns how many messages it has answered. */
async function primary(subject: string): Promise<() => number> {
  if (subject === 'floodgate') {
    const { ClusterStoreHost, serveClusterWorkers } = await import('floodgate/cluster');
    const host = new ClusterStoreHost();
    serveClusterWorkers(host, cluster);
    return () => host.calls;
  }
  const { RateLimiterClusterMaster } = await import('rate-limiter-flexible');
  new RateLimiterClusterMaster();
  let count = 0;
  cluster.on('message', (_w, m: { channel?: string }) => {
    if (typeof m === 'object' && m !== null && m.channel === 'rate_limiter_flexible') count++;
  });
  return () => count;
}

/** A function deciding one request on the shared key, true when admitted. */
async function workerDecide(subject: string): Promise<() => Promise<boolean>> {
  if (subject === 'floodgate') {
    const { Limiter, fixedWindow } = await import('floodgate');
    const { ClusterStore } = await import('floodgate/cluster');
    const limiter = new Limiter({ policy: fixedWindow({ limit: LIMIT, windowMs: 1000 }), store: new ClusterStore() });
    return async () => (await limiter.consume('global')).allowed;
  }
  const { RateLimiterCluster } = await import('rate-limiter-flexible');
  const limiter = new RateLimiterCluster({ keyPrefix: 'bench', points: LIMIT, duration: 1, timeoutMs: 5000 });
  return () =>
    limiter.consume('global').then(
      () => true,
      (res: unknown) => {
        if (res instanceof Error) throw res;
        return false;
      },
    );
}
