/**
 * The decision service's CPU per request in instructions, counted by valgrind's callgrind: Envoy's
 * `ShouldRateLimit` with 3 descriptors (bench/decision.ts's requests and config) against
 * `floodgate ratelimit` on the memory store, a grpc-js server deciding the same descriptors with a
 * `Map` of counts and answering the same fields and headers, and a grpc-js server answering a
 * constant (bench/decision/peers.ts). A figure that a busy machine does not move, beside
 * bench/decision.ts's CPU-seconds, which it does.
 *
 * Each server runs under callgrind with V8's `--predictable` (compilation and GC on the main
 * thread, so they are counted where they happen) and instrumentation off; `--warmup` calls let V8
 * compile what it will, `--settle` more pass counted but dropped, then `--windows` windows of
 * `--requests` calls each are counted, `--in-flight` at a time over one HTTP/2 connection (as
 * Envoy keeps one to its rate limit service). One at a time by default: with more, how many calls
 * a server reads per turn follows how busy the machine is, and so does the count (the Map peer
 * counted 285,000 and 436,000 a call at 8 in flight in two runs an hour apart). The least window is the steady cost: a window can
 * only gain from a full GC or a timer that fires more often when execution is 50 times slower
 * (see bench/http-instructions.ts). Only the server's own user-space instructions count: not the
 * kernel's socket work and not the client's. Nothing is asserted.
 *
 *   node --conditions=floodgate-source --import tsx bench/decision-instructions.ts [--requests 2000]
 *        [--windows 4] [--warmup 6000] [--settle 4000] [--in-flight 1] [--only floodgate,map,constant]
 */
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { countInstructions, type CallgrindSubject, type CallgrindWindows } from './callgrind.js';
import { CONFIG, grpcCaller } from './decision/peers.js';

const CHILD_FLAGS = ['--predictable', '--conditions=floodgate-source', '--import', 'tsx'];
const SERVICE_MAIN = fileURLToPath(new URL('../packages/server/src/cli/ratelimit-main.ts', import.meta.url));
const DECISION_BENCH = fileURLToPath(new URL('./decision.ts', import.meta.url));

/** sendCalls makes `count` ShouldRateLimit calls, `inFlight` at a time, on one client (one connection). */
async function sendCalls(port: number, options: { count: number; inFlight: number }): Promise<void> {
  const client = grpcCaller(port);
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < options.count) await client.call(next++);
  };
  try {
    await Promise.all(Array.from({ length: Math.min(options.inFlight, options.count) }, lane));
  } finally {
    client.close();
  }
}

function portOf(field: 'grpcPort' | 'port'): (stdout: string) => number | undefined {
  return (out) => {
    const line = out.split('\n').find((l) => l.startsWith('{') && l.endsWith('}'));
    return line === undefined ? undefined : (JSON.parse(line) as Record<string, number>)[field];
  };
}

function subjects(config: string): Record<string, CallgrindSubject> {
  const common = { path: 'ShouldRateLimit', status: 0, send: sendCalls };
  return {
    floodgate: {
      ...common,
      name: 'floodgate ratelimit (memory store)',
      command: [
        process.execPath,
        ...CHILD_FLAGS,
        SERVICE_MAIN,
        '--grpc-port',
        '0',
        '--http-port',
        '0',
        '--config',
        config,
      ],
      portOf: portOf('grpcPort'),
    },
    map: {
      ...common,
      name: 'grpc-js Map peer',
      command: [process.execPath, ...CHILD_FLAGS, DECISION_BENCH, '--serve-bare', 'grpc-map'],
      portOf: portOf('port'),
    },
    constant: {
      ...common,
      name: 'grpc-js constant answer',
      command: [process.execPath, ...CHILD_FLAGS, DECISION_BENCH, '--serve-bare', 'grpc'],
      portOf: portOf('port'),
    },
  };
}

const { values } = parseArgs({
  options: {
    requests: { type: 'string', default: '2000' },
    windows: { type: 'string', default: '4' },
    warmup: { type: 'string', default: '6000' },
    settle: { type: 'string', default: '4000' },
    'in-flight': { type: 'string', default: '1' },
    only: { type: 'string', default: 'floodgate,map,constant' },
  },
});
const windows: CallgrindWindows = {
  requests: Number(values.requests),
  windows: Number(values.windows),
  warmup: Number(values.warmup),
  settle: Number(values.settle),
  inFlight: Number(values['in-flight']),
};
const config = join(tmpdir(), `floodgate-decision-instructions-${process.pid}.yaml`);
writeFileSync(config, CONFIG);
const all = subjects(config);
const least = new Map<string, number>();
console.log(`${'subject'.padEnd(36)}${'instructions/request'.padStart(21)}  windows`);
for (const id of values.only.split(',')) {
  const subject = all[id];
  if (subject === undefined) throw new Error(`--only: no subject ${id}; known: ${Object.keys(all).join(', ')}`);
  const counts = await countInstructions(subject, windows);
  const min = Math.min(...counts);
  least.set(id, min);
  const spread = counts.map((c) => Math.round(c).toLocaleString('en')).join(', ');
  console.log(`${subject.name.padEnd(36)}${Math.round(min).toLocaleString('en').padStart(21)}  ${spread}`);
}
const fg = least.get('floodgate');
for (const peer of ['map', 'constant'])
  if (fg !== undefined && least.has(peer))
    console.log(`floodgate ÷ ${all[peer]!.name}: ${(fg / least.get(peer)!).toFixed(3)}x the instructions per request`);
