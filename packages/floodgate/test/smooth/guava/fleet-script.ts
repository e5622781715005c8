import type { LineProcess } from './line-process.js';

/** FleetModel is a smooth limiter as both Guava's driver and the workers create it. */
export type FleetModel =
  | { readonly kind: 'bursty'; readonly rate: number; readonly maxBurstSeconds: number }
  | { readonly kind: 'warmingUp'; readonly rate: number; readonly warmupMicros: number; readonly coldFactor: number };

/**
 * FleetOp is one step of a script: an acquire, tryAcquire or reserve issued by process `proc`,
 * a rate change, or the script's own sleep. Times are whole µs; tryAcquire timeouts whole ms.
 */
export type FleetOp =
  | { readonly op: 'acquire' | 'reserve'; readonly proc: number; readonly permits: number }
  | { readonly op: 'try'; readonly proc: number; readonly permits: number; readonly timeoutMicros: number }
  | { readonly op: 'sleep'; readonly micros: number }
  | { readonly op: 'setRate'; readonly proc: number; readonly rate: number };

/** FleetScript is a model and the steps run on it, one at a time. */
export interface FleetScript {
  readonly model: FleetModel;
  readonly ops: readonly FleetOp[];
}

/** A small seeded generator (mulberry32), so a failing script can be made again from its seed. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const RATES = [0.5, 1, 2, 3, 5, 7.5, 10, 20, 50, 100, 333.3, 1000];

/**
 * randomScript returns a script of `length` steps over `processes` processes, made from `seed`:
 * a bursty or warming-up limiter at a random rate; acquires of 1 to 3 permits (now and then a big
 * one that pays later), tryAcquires with timeouts of 0 to 3 s, reserves (callers at the same
 * moment), sleeps of up to 3 s, and rate changes.
 */
export function randomScript(seed: number, processes: number, length: number): FleetScript {
  const r = random(seed);
  const pick = <T>(list: readonly T[]): T => list[Math.floor(r() * list.length)]!;
  const int = (min: number, max: number): number => min + Math.floor(r() * (max - min + 1));
  const model: FleetModel =
    r() < 0.5
      ? { kind: 'bursty', rate: pick(RATES), maxBurstSeconds: pick([0, 0.5, 1, 2.5]) }
      : { kind: 'warmingUp', rate: pick(RATES), warmupMicros: int(1, 4000) * 1000, coldFactor: pick([1, 2, 3, 4.5]) };
  const ops: FleetOp[] = [];
  const permits = (): number => (r() < 0.05 ? int(10, 200) : int(1, 3));
  for (let i = 0; i < length; i++) {
    const proc = int(0, processes - 1);
    const x = r();
    if (x < 0.4) ops.push({ op: 'acquire', proc, permits: permits() });
    else if (x < 0.6) ops.push({ op: 'try', proc, permits: permits(), timeoutMicros: int(0, 3000) * 1000 });
    else if (x < 0.72) ops.push({ op: 'reserve', proc, permits: permits() });
    else if (x < 0.95) ops.push({ op: 'sleep', micros: r() < 0.3 ? int(0, 3000) * 1000 : int(0, 3_000_000) });
    else ops.push({ op: 'setRate', proc, rate: pick(RATES) });
  }
  return { model, ops };
}

/** createLine returns the Guava driver's command that creates `model`. */
export function createLine(model: FleetModel): string {
  return model.kind === 'bursty'
    ? `bursty ${model.rate} ${model.maxBurstSeconds}`
    : `warm ${model.rate} ${model.warmupMicros} ${model.coldFactor}`;
}

/** guavaLine returns `op` as the Guava driver's command. */
function guavaLine(op: FleetOp): string {
  switch (op.op) {
    case 'acquire':
      return `acquire ${op.permits}`;
    case 'reserve':
      return `reserve ${op.permits}`;
    case 'try':
      return `try ${op.permits} ${op.timeoutMicros}`;
    case 'sleep':
      return `sleep ${op.micros}`;
    case 'setRate':
      return `setRate ${op.rate}`;
  }
}

/** runOnGuava runs `script` on one Guava limiter and returns its answer to each step. */
export async function runOnGuava(
  guava: { ask(line: string): Promise<string> },
  script: FleetScript,
): Promise<string[]> {
  await guava.ask(createLine(script.model));
  const answers: string[] = [];
  for (const op of script.ops) answers.push(await guava.ask(guavaLine(op)));
  return answers;
}

/**
 * runOnFleet runs `script` on the fleet under the limiter name `name`: each step goes to the
 * worker process it names, at the script's time, and the script's clock moves on by what an
 * acquire waited, as Guava's sleeping stopwatch does. Every worker opens the limiter; the first
 * creates it at time 0. Answers are in the Guava driver's format.
 */
export async function runOnFleet(
  workers: readonly LineProcess[],
  script: FleetScript,
  name: string,
): Promise<string[]> {
  let nowMicros = 0;
  const ask = (proc: number, command: object): Promise<string> =>
    workers[proc]!.ask(JSON.stringify({ ...command, nowMicros }));
  await Promise.all(workers.map((_, proc) => ask(proc, { op: 'open', name, model: script.model })));
  await ask(0, { op: 'create' });
  const answers: string[] = [];
  for (const op of script.ops) {
    if (op.op === 'sleep') {
      nowMicros += op.micros;
      answers.push('ok');
      continue;
    }
    const answer = await ask(op.proc, op);
    answers.push(answer);
    const slept = /^(?:true )?([0-9]+)$/.exec(answer);
    if (slept !== null && op.op !== 'reserve') nowMicros += Number(slept[1]);
  }
  return answers;
}
