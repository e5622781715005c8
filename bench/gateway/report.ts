/**
 * The gateway benchmark's tables: per case, each cell's medians and its ratios to the reference
 * peers, each ratio the median of the rounds' own ratios (a round of a cell against the same
 * round of the reference) with the lowest and highest round.
 */
import { REDIS_TWINS, type Case, type CellSpec } from './cells.js';
import { median, type Round } from './measure.js';

/** Results are each cell's rounds, by cell name. */
export type Results = ReadonlyMap<string, readonly Round[]>;

const f = (n: number, digits: number): string => (Number.isFinite(n) ? n.toFixed(digits) : 'n/a');

/** Ratio is a median of per-round ratios with their range. */
interface Ratio {
  readonly median: number;
  readonly min: number;
  readonly max: number;
}

function ratioOf(results: Results, cell: string, ref: string, pick: (r: Round) => number): Ratio | undefined {
  const a = results.get(cell);
  const b = results.get(ref);
  if (a === undefined || b === undefined) return undefined;
  const rs: number[] = [];
  for (let i = 0; i < Math.min(a.length, b.length); i++) rs.push(pick(a[i]!) / pick(b[i]!));
  return { median: median(rs), min: Math.min(...rs), max: Math.max(...rs) };
}

function ratioText(r: Ratio | undefined): string {
  return r === undefined ? 'n/a' : `${f(r.median, 2)}x (${f(r.min, 2)}-${f(r.max, 2)})`;
}

const rps = (r: Round): number => r.rps;
const cpu = (r: Round): number => r.cpuUsPerRequest;
const p99 = (r: Round): number => r.p99Ms;

/** printCase prints one case's table and its ratios to `refs`. */
export function printCase(results: Results, specs: readonly CellSpec[], which: Case, refs: readonly string[]): void {
  const cells = specs.filter((s) => s.case === which && results.has(s.name));
  if (cells.length === 0) return;
  console.log(
    `\n${which === 'admit' ? '(a) Admitted: one per-IP limit that never refuses' : '(b) Refusal-heavy: a per-IP limit that refuses nearly every request'}`,
  );
  console.log('cell                   req/s   p50 ms   p99 ms   CPU µs/req (min-max)   non-2xx share');
  for (const s of cells) {
    const rs = results.get(s.name)!;
    const cpus = rs.map(cpu);
    const spread = `(${f(Math.min(...cpus), 1)}-${f(Math.max(...cpus), 1)})`;
    const total = rs.reduce((n, r) => n + r.requests, 0);
    const non2xx = rs.reduce((n, r) => n + r.non2xx, 0);
    const line = `${s.name.padEnd(20)} ${f(median(rs.map(rps)), 0).padStart(7)}  ${f(median(rs.map((r) => r.p50Ms)), 2).padStart(7)}  ${f(median(rs.map(p99)), 2).padStart(7)}  ${f(median(cpus), 1).padStart(8)} ${spread.padEnd(13)}   ${f(non2xx / total, 3)}`;
    console.log(line);
  }
  for (const ref of refs) {
    if (!results.has(ref)) continue;
    console.log(`\nratios to ${ref} (median of the rounds' ratios, lowest-highest round):`);
    console.log('cell                   req/s                CPU µs/req           p99');
    for (const s of cells) {
      if (s.name === ref) continue;
      console.log(
        `${s.name.padEnd(20)}   ${ratioText(ratioOf(results, s.name, ref, rps)).padEnd(20)} ${ratioText(ratioOf(results, s.name, ref, cpu)).padEnd(20)} ${ratioText(ratioOf(results, s.name, ref, p99))}`,
      );
    }
  }
}

/** printRedis prints the Redis cells beside their memory-store twins, with Redis's CPU and commands per request. */
export function printRedis(results: Results): void {
  const present = REDIS_TWINS.filter(([r]) => results.has(r));
  if (present.length === 0) return;
  console.log(
    '\n(c) Redis (one redis-server started by the run, on the load CPU): the gateway on Redis ÷ the same rules on the memory store',
  );
  console.log(
    'cell                   req/s ratio          gateway CPU ratio    Redis CPU µs/req   Redis commands per request',
  );
  for (const [redis, memory] of present) {
    const rs = results.get(redis)!;
    const names = new Set(rs.flatMap((r) => [...r.redisCommandsPerRequest.keys()]));
    const commands = [...names].map((n) => ({ n, per: median(rs.map((r) => r.redisCommandsPerRequest.get(n) ?? 0)) }));
    const total = commands.reduce((t, c) => t + c.per, 0);
    const listed = commands
      .sort((a, b) => b.per - a.per)
      .map((c) => `${c.n} ${f(c.per, 3)}`)
      .join(', ');
    console.log(
      `${redis.padEnd(20)}   ${ratioText(ratioOf(results, redis, memory, rps)).padEnd(20)} ${ratioText(ratioOf(results, redis, memory, cpu)).padEnd(20)} ${f(median(rs.map((r) => r.redisCpuUsPerRequest)), 1).padStart(8)}           ${f(total, 3)} (${listed})`,
    );
  }
  console.log(
    'Commands run inside a Lua script are counted by Redis as well as the EVALSHA that ran them: round trips are the EVALSHA/EVAL calls plus any command outside a script.',
  );
}

/** printCells prints what each cell runs. */
export function printCells(specs: readonly CellSpec[], names: ReadonlySet<string>): void {
  console.log('\nCells:');
  for (const s of specs) if (names.has(s.name)) console.log(`  ${s.name.padEnd(20)} ${s.does}`);
}
