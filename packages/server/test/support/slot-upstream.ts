/** Test support: the slot service (`slot-service.ts`) started as a child process, and its control endpoint. */
import { spawn, type ChildProcess } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { call } from './http.js';

const SERVICE = join(dirname(fileURLToPath(import.meta.url)), 'slot-service.ts');

/** SlotStats is what the slot service saw. */
export interface SlotStats {
  readonly received: number;
  readonly byPath: Readonly<Record<string, number>>;
  /** Requests it holds now, served or waiting. */
  readonly open: number;
  /** The most it held at once since the last `resetPeak`. */
  readonly peakOpen: number;
  readonly inService: number;
  readonly queued: number;
}

/** SlotSettings changes how the slot service behaves. */
export interface SlotSettings {
  readonly slots?: number;
  readonly serviceMs?: number;
  /** Answer every request at once with this status; null to recover. */
  readonly errorStatus?: number | null;
  /** Hold every request without an answer. */
  readonly hang?: boolean;
  readonly resetPeak?: boolean;
}

/** SlotUpstream is a running slot service. */
export interface SlotUpstream {
  readonly origin: string;
  readonly child: ChildProcess;
  stats(): Promise<SlotStats>;
  control(settings: SlotSettings): Promise<SlotStats>;
  stop(): Promise<void>;
}

/** startSlotUpstream starts the slot service with `slots` slots of `serviceMs` each, resolving once it listens. */
export async function startSlotUpstream(options: { slots: number; serviceMs: number }): Promise<SlotUpstream> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', SERVICE, '--slots', String(options.slots), '--service-ms', String(options.serviceMs)],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const port = await new Promise<number>((resolve, reject) => {
    let text = '';
    child.stdout!.on('data', (c: Buffer) => {
      text += c.toString();
      const nl = text.indexOf('\n');
      if (nl >= 0) resolve((JSON.parse(text.slice(0, nl)) as { port: number }).port);
    });
    child.once('exit', (code) => reject(new Error(`the slot service exited (${String(code)}) before listening`)));
  });
  const origin = `http://127.0.0.1:${port}`;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    origin,
    child,
    stats: async () => JSON.parse((await call(`${origin}/__control`)).body) as SlotStats,
    control: async (settings) =>
      JSON.parse(
        (await call(`${origin}/__control`, { method: 'POST', body: JSON.stringify(settings) })).body,
      ) as SlotStats,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}
