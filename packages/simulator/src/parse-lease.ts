import { FloodgateError, leaseSettingsOf } from 'floodgate';
import { SimulatorError } from './errors.js';
import { Fields, invalid } from './fields.js';
import type { DeathSpec, LeaseSpec } from './scenario.js';

/** LeasedFleetFields are a distribution's lease fields, checked: the lease, how requests are handed out, who dies. */
export interface LeasedFleetFields {
  readonly lease: LeaseSpec | undefined;
  readonly weights: number[];
  readonly deaths: DeathSpec[];
}

/** The fields a leased fleet does not take, and why. */
const NOT_WITH_LEASES: Record<string, string> = {
  skewMs:
    "does not apply with lease: the ledger runs on the store's clock, and a node's own clock only times its leases",
  maxSkewMs:
    "does not apply with lease: the ledger runs on the store's clock, and a node's own clock only times its leases",
  outage: 'is not simulated with lease yet (a store away while units are held); run the outage on a lane without lease',
};

/**
 * parseLeasedFleet reads `lease`, `weights` and `deaths` from the distribution `f` of `nodes`
 * nodes. `weights` and `deaths` apply only with `lease`; with it, skews and outages do not. The
 * library checks the lease's numbers (`leaseSettingsOf`), and its refusal names the field.
 */
export function parseLeasedFleet(f: Fields, nodes: number): LeasedFleetFields {
  const lease = f.has('lease') ? parseLease(f.raw('lease'), f.at('lease')) : (f.raw('lease') as undefined);
  if (lease === undefined) {
    for (const name of ['weights', 'deaths'])
      if (f.has(name))
        throw invalid(
          f.at(name),
          'applies only with lease: a node that decides every request on the store holds nothing of the limit',
        );
  } else {
    for (const [name, why] of Object.entries(NOT_WITH_LEASES)) if (f.has(name)) throw invalid(f.at(name), why);
  }
  return { lease, weights: readWeights(f, nodes), deaths: readDeaths(f, nodes) };
}

function parseLease(value: unknown, path: string): LeaseSpec {
  const f = new Fields(value ?? {}, path);
  const options = { leaseMs: f.raw('leaseMs'), maxOutstandingShare: f.raw('maxOutstandingShare') };
  f.done();
  try {
    const settings = leaseSettingsOf(options as { leaseMs?: number; maxOutstandingShare?: number }, path);
    return { leaseMs: settings.leaseMs, maxOutstandingShare: settings.maxOutstandingShare };
  } catch (error) {
    if (!(error instanceof FloodgateError) || error.option === undefined) throw error;
    throw new SimulatorError('INVALID_SCENARIO', `scenario field ${error.message}`, error.option, { cause: error });
  }
}

/** Weights: one per node, none negative, not all 0; default all 1 (requests handed out in turn). */
function readWeights(f: Fields, nodes: number): number[] {
  if (!f.has('weights')) return new Array<number>(nodes).fill(1);
  const list = f.array('weights');
  if (list.length !== nodes)
    throw invalid(f.at('weights'), `must hold one weight per node (${nodes}), got ${list.length}`);
  const weights = list.map((v, i) => {
    if (typeof v !== 'number' || !Number.isFinite(v) || v < 0)
      throw invalid(`${f.at('weights')}[${i}]`, 'must be a finite number, at least 0');
    return v;
  });
  if (!weights.some((w) => w > 0)) throw invalid(f.at('weights'), 'must give at least one node a weight above 0');
  return weights;
}

/** Deaths: each a node of the fleet dying once, at a time from 0; at least one node lives on. */
function readDeaths(f: Fields, nodes: number): DeathSpec[] {
  const deaths = f.array('deaths').map((value, i) => {
    const d = new Fields(value, `${f.at('deaths')}[${i}]`);
    const death = {
      node: d.number('node', { min: 0, max: nodes - 1, integer: true }),
      atMs: d.number('atMs', { min: 0 }),
    };
    d.done();
    return death;
  });
  const dead = new Set<number>();
  for (const [i, death] of deaths.entries()) {
    if (dead.has(death.node))
      throw invalid(`${f.at('deaths')}[${i}].node`, `names node ${death.node} again: a node dies once`);
    dead.add(death.node);
  }
  if (nodes > 0 && dead.size >= nodes)
    throw invalid(f.at('deaths'), `kills every node (${nodes}): at least one must live on to take the requests`);
  return deaths.sort((a, b) => a.atMs - b.atMs || a.node - b.node);
}
