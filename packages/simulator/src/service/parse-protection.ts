import { ConcurrencyLimiter, FloodgateError, ManualClock } from 'floodgate';
import { SimulatorError, describe } from '../errors.js';
import { Fields, invalid } from '../fields.js';
import type { AdaptiveSpec, Protection, ProtectionLaneSpec } from './spec.js';

const POSITIVE = { min: 0, above: true };
const WHOLE = { min: 1, integer: true };
const KINDS = ['none', 'concurrency', 'adaptive'] as const;

/**
 * parseProtections returns the checked lanes at `path`: each is the word `none` or an object
 * holding one of `none: true`, `concurrency: { limit }` and `adaptive: { ...options } | true`,
 * with an optional `name` and `tiers` (`true` or `{ reserveRatio }`, for a service of
 * `tierCount` tiers). The library checks each limiter's options too, and its complaint names the
 * scenario field.
 */
export function parseProtections(list: unknown[], path: string, tierCount: number): ProtectionLaneSpec[] {
  const lanes = list.map((value, i) => parseLane(value, `${path}[${i}]`, tierCount));
  const names = new Set<string>();
  for (const [i, lane] of lanes.entries()) {
    if (names.has(lane.name))
      throw invalid(`${path}[${i}].name`, `repeats the name ${JSON.stringify(lane.name)}; give each lane its own name`);
    names.add(lane.name);
  }
  return lanes;
}

function parseLane(value: unknown, path: string, tierCount: number): ProtectionLaneSpec {
  if (value === 'none') return { name: 'none', protection: { type: 'none' }, tiers: undefined };
  if (typeof value === 'string')
    throw invalid(path, `must be 'none' or an object with one of none, concurrency, adaptive, got ${describe(value)}`);
  const f = new Fields(value, path);
  const given = KINDS.filter((kind) => f.has(kind));
  if (given.length === 0) {
    // A misspelt kind (`adaptiv`) is reported as the unknown field it is.
    for (const known of ['name', 'tiers']) f.raw(known);
    f.done();
  }
  if (given.length !== 1)
    throw invalid(
      path,
      `must hold exactly one of none, concurrency, adaptive, got ${given.length === 0 ? 'none of them' : given.join(' and ')}`,
    );
  const protection = parseProtection(f, given[0]!);
  const tiers = f.has('tiers') ? parseTiers(f, protection, tierCount) : (f.raw('tiers') as undefined);
  const name = f.string('name', defaultName(protection, tiers !== undefined));
  f.done();
  const lane = { name, protection, tiers };
  checkWithLibrary(lane, path, tierCount);
  return lane;
}

function parseProtection(f: Fields, kind: (typeof KINDS)[number]): Protection {
  if (kind === 'none') {
    if (f.raw('none') !== true) throw invalid(f.at('none'), 'must be true (or write the lane as the word none)');
    return { type: 'none' };
  }
  if (kind === 'concurrency') {
    const c = new Fields(f.raw('concurrency'), f.at('concurrency'));
    const limit = c.number('limit', { ...WHOLE, max: 1_000_000 });
    c.done();
    return { type: 'concurrency', limit };
  }
  const raw = f.raw('adaptive');
  return { type: 'adaptive', options: raw === true ? {} : parseAdaptive(raw, f.at('adaptive')) };
}

/** The `AdaptiveLimit` options a scenario may set (`queueTarget` as a number only); the library checks their relations. */
function parseAdaptive(value: unknown, path: string): AdaptiveSpec {
  const f = new Fields(value, path);
  const options: Record<string, number | undefined> = {
    initialLimit: f.optionalNumber('initialLimit', WHOLE),
    minLimit: f.optionalNumber('minLimit', WHOLE),
    maxLimit: f.optionalNumber('maxLimit', WHOLE),
    windowMs: f.optionalNumber('windowMs', POSITIVE),
    minSamples: f.optionalNumber('minSamples', WHOLE),
    maxSamples: f.optionalNumber('maxSamples', WHOLE),
    queueTarget: f.optionalNumber('queueTarget', { min: 0 }),
    smoothing: f.optionalNumber('smoothing', { ...POSITIVE, max: 1 }),
    backoffRatio: f.optionalNumber('backoffRatio', { ...POSITIVE, max: 1 }),
    probeIntervalMs: f.optionalNumber('probeIntervalMs', POSITIVE),
    minProbeIntervalMs: f.optionalNumber('minProbeIntervalMs', POSITIVE),
  };
  f.done();
  const spec: Record<string, number> = {};
  for (const [key, option] of Object.entries(options)) if (option !== undefined) spec[key] = option;
  return spec;
}

function parseTiers(f: Fields, protection: Protection, tierCount: number): { reserveRatio: number | undefined } {
  const where = f.at('tiers');
  if (protection.type === 'none')
    throw invalid(where, 'does not apply to a lane without protection: nothing there tells tiers apart');
  if (tierCount < 2) throw invalid(where, 'needs service.tiers to list at least 2 tiers of the traffic');
  const raw = f.raw('tiers');
  if (raw === true) return { reserveRatio: undefined };
  const t = new Fields(raw, where);
  const reserveRatio = t.number('reserveRatio', { min: 0 });
  if (reserveRatio * (tierCount - 1) >= 1)
    throw invalid(
      t.at('reserveRatio'),
      `times the tiers below the top (${tierCount - 1}) must stay below 1, got ${reserveRatio}`,
    );
  t.done();
  return { reserveRatio };
}

function defaultName(protection: Protection, tiered: boolean): string {
  const base = protection.type === 'concurrency' ? `concurrency ${protection.limit}` : protection.type;
  return tiered ? `${base}, tiered` : base;
}

/**
 * buildLimiter returns the library's `ConcurrencyLimiter` for a protected lane on `clock` (never
 * waiting: `maxQueue` 0), or undefined for `none`.
 */
export function buildLimiter(
  lane: ProtectionLaneSpec,
  tierCount: number,
  clock: ManualClock,
): ConcurrencyLimiter | undefined {
  const p = lane.protection;
  if (p.type === 'none') return undefined;
  const reserve = lane.tiers?.reserveRatio === undefined ? {} : { reserveRatio: lane.tiers.reserveRatio };
  const tiers = lane.tiers === undefined ? {} : { tiers: tierCount, ...reserve };
  return new ConcurrencyLimiter({
    ...(p.type === 'concurrency' ? { limit: p.limit } : { adaptive: p.options }),
    ...tiers,
    clock,
  });
}

/** Builds the lane's limiter once, so that the library's own checks (minLimit ≤ maxLimit, ...) name the scenario field. */
function checkWithLibrary(lane: ProtectionLaneSpec, path: string, tierCount: number): void {
  try {
    buildLimiter(lane, tierCount, new ManualClock(0));
  } catch (error) {
    if (!(error instanceof FloodgateError) || error.code !== 'INVALID_OPTION') throw error;
    const option = error.option ?? '';
    const field = option.startsWith('adaptive.')
      ? `${path}.${option}`
      : option.endsWith('reserveRatio')
        ? `${path}.tiers.reserveRatio`
        : option.endsWith('limit')
          ? `${path}.concurrency.limit`
          : path;
    throw new SimulatorError('INVALID_SCENARIO', `scenario field ${field}: ${error.message}`, field, { cause: error });
  }
}
