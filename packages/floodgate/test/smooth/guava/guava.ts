import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { LineProcess } from './line-process.js';

const run = promisify(execFile);

/** GUAVA_JAR is where Debian's libguava-java puts Guava (31.1 on bookworm). */
export const GUAVA_JAR = process.env.FLOODGATE_GUAVA_JAR ?? '/usr/share/java/guava.jar';
const DRIVER_SOURCE = fileURLToPath(new URL('./FloodgateGuavaDriver.java', import.meta.url));
const DRIVER_CLASS = 'com.google.common.util.concurrent.FloodgateGuavaDriver';

/**
 * guavaMissing returns why real Guava cannot run here (no java or javac on the PATH, or no Guava
 * jar), or undefined when it can. Tests skip with this reason.
 */
export async function guavaMissing(): Promise<string | undefined> {
  if (!existsSync(GUAVA_JAR))
    return `no Guava jar at ${GUAVA_JAR} (apt-get install libguava-java, or set FLOODGATE_GUAVA_JAR)`;
  for (const tool of ['java', 'javac']) {
    try {
      await run(tool, ['-version']);
    } catch {
      return `no ${tool} on the PATH (apt-get install default-jdk-headless)`;
    }
  }
  return undefined;
}

/** Guava is the running driver: `ask` one command, `close` to end it and delete its classes. */
export interface Guava {
  ask(line: string): Promise<string>;
  close(): Promise<void>;
}

/** startGuava compiles the driver against the jar (into a temporary folder) and starts it. */
export async function startGuava(): Promise<Guava> {
  const classes = await mkdtemp(join(tmpdir(), 'floodgate-guava-'));
  await run('javac', ['-cp', GUAVA_JAR, '-d', classes, DRIVER_SOURCE]);
  const driver = new LineProcess('java', ['-cp', `${GUAVA_JAR}:${classes}`, DRIVER_CLASS], 'the Guava driver');
  return {
    ask: (line) => driver.ask(line),
    close: async () => {
      await driver.close();
      await rm(classes, { recursive: true, force: true });
    },
  };
}
