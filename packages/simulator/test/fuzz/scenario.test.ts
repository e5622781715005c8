/**
 * Fuzzing the simulator's readers (floodgate's test/support/fuzz.ts): scenario files (the gallery's
 * and the examples', mutated, or values of the right keys in the wrong shapes) read by
 * parseScenario or parseServiceScenario as the command picks, and traces read by parseTrace. Each
 * returns within the time limit a checked scenario or trace, or a SimulatorError naming the field.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { parse as parseYaml } from 'yaml';
import { parseScenario, parseServiceScenario, parseTrace, SimulatorError } from '../../src/index.js';
import { fuzz } from '../../../floodgate/test/support/fuzz.js';
import { anyText, edgeNumber, hostileJson, hostileText } from '../../../floodgate/test/support/hostile.js';
import { runs } from '../../../floodgate/test/support/sweep.js';
import { deepYaml, mutated, yamlFilesIn } from '../../../floodgate/test/support/yaml-inputs.js';

const SCENARIOS = new URL('../../scenarios', import.meta.url).pathname;

const SCENARIO_KEYS = [
  'durationMs',
  'traffic',
  'policies',
  'service',
  'type',
  'rate',
  'ratePerSecond',
  'count',
  'boundaryMs',
  'name',
  'policy',
  'limit',
  'windowMs',
  'capacity',
  'refillPerSecond',
  'nodes',
  'seed',
  'bucketMs',
  'keys',
  'file',
];

const isSimulatorError = (error: unknown): boolean => error instanceof SimulatorError && error.field !== undefined;

/** readScenario reads `data` as `floodgate simulate` does: a service scenario when it has `service`. */
function readScenario(data: unknown): unknown {
  const isService = typeof data === 'object' && data !== null && Object.hasOwn(data, 'service');
  return isService ? parseServiceScenario(data) : parseScenario(data);
}

describe('fuzzing the simulator’s readers', () => {
  const files = yamlFilesIn(SCENARIOS);

  it('scenarios: a checked scenario, or a SimulatorError naming the field', () => {
    const data = fc.oneof(
      {
        weight: 4,
        arbitrary: fc.oneof(mutated(files), deepYaml, anyText()).map((text) => {
          try {
            return parseYaml(text) as unknown;
          } catch {
            return undefined; // the command refuses text that is not YAML before reading it
          }
        }),
      },
      { weight: 2, arbitrary: hostileJson(SCENARIO_KEYS) },
      {
        weight: 1,
        arbitrary: fc.record({
          durationMs: edgeNumber,
          traffic: fc.array(hostileJson(SCENARIO_KEYS), { maxLength: 3 }),
          policies: fc.array(hostileJson(SCENARIO_KEYS), { maxLength: 3 }),
        }),
      },
    );
    fuzz(
      'simulator scenario reader',
      data,
      (value) => {
        if (value === undefined) return;
        assert.ok(readScenario(value) !== undefined);
      },
      { runs: runs(1500), typed: isSimulatorError },
    );
  });

  it('traces: rows, or a SimulatorError naming the line', () => {
    const line = fc.oneof(
      fc.tuple(edgeNumber, hostileText(2), edgeNumber).map(([at, key, cost]) => `${at},${key},${cost}`),
      hostileJson(['atMs', 'key', 'cost']).map((v) => JSON.stringify(v) ?? ''),
      hostileText(6),
    );
    const input = fc.tuple(
      fc.oneof(
        fc.array(line, { maxLength: 8 }).map((lines) => lines.join('\n')),
        anyText(),
      ),
      fc.constantFrom('csv' as const, 'jsonl' as const),
    );
    fuzz(
      'simulator trace reader',
      input,
      ([text, format]) => {
        for (const row of parseTrace(text, format, 'fuzz.trace'))
          assert.ok(Number.isFinite(row.atMs), JSON.stringify(row));
      },
      { runs: runs(2000), typed: isSimulatorError },
    );
  });
});
