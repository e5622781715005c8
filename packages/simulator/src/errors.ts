/**
 * Stable codes carried by every {@link SimulatorError}.
 *
 * - `INVALID_SCENARIO`: a scenario field is missing, of the wrong type, out of range or unknown.
 * - `INVALID_TRACE`: a line of a replayed trace (CSV or JSON lines) cannot be read.
 * - `INVALID_ARGUMENT`: a command-line flag is unknown, missing its value, or malformed.
 * - `IO_ERROR`: a scenario or trace file could not be read, or an output could not be written.
 */
export type SimulatorErrorCode = 'INVALID_SCENARIO' | 'INVALID_TRACE' | 'INVALID_ARGUMENT' | 'IO_ERROR';

/**
 * SimulatorError is the typed error of the simulator: `code` is stable, and `field` names the
 * scenario field (`policies[1].policy.limit`), trace line (`trace.csv:12`) or flag at fault.
 *
 * @example
 * try { parseScenario({ durationMs: -1 }); }
 * catch (e) { if (e instanceof SimulatorError) console.error(e.code, e.field); }
 */
export class SimulatorError extends Error {
  /** The stable code naming the kind of problem. */
  readonly code: SimulatorErrorCode;
  /** The scenario field, trace line or flag at fault. */
  readonly field: string;

  constructor(code: SimulatorErrorCode, message: string, field: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'SimulatorError';
    this.code = code;
    this.field = field;
  }
}

/** describe returns a short rendering of a bad value for an error message. */
export function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  if (typeof value === 'number' || typeof value === 'boolean' || value === undefined || value === null)
    return String(value);
  return Array.isArray(value) ? 'an array' : typeof value;
}
