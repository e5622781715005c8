import { FloodgateError, leaseSettingsOf, leaseTermsOf } from 'floodgate';
import { Fields, invalid } from './fields.js';
import { parseLeasedFleet } from './parse-lease.js';
import { buildAlgorithm, type LimiterPolicySpec } from './policy.js';
import {
  LIMITER_POLICIES,
  type DistributionSpec,
  type LaneSpec,
  type OutageSpec,
  type PolicySpec,
} from './scenario.js';

const POLICY_TYPES = [...LIMITER_POLICIES, 'shaping-queue', 'smooth-bursty', 'smooth-warming-up'] as const;
const POSITIVE = { min: 0, above: true };

/** parseLane returns the checked lane (one policy and how it runs) at `path`. */
export function parseLane(value: unknown, path: string): LaneSpec {
  const f = new Fields(value, path);
  const name = f.string('name');
  const policy = parsePolicy(f.required('policy'), f.at('policy'));
  const mode = f.choice('mode', ['refuse', 'wait'] as const, 'refuse');
  const maxWaitMs = f.number('maxWaitMs', { min: 0, max: Infinity }, Infinity);
  const isLimiter = (LIMITER_POLICIES as readonly string[]).includes(policy.type);
  if (!isLimiter && f.has('mode')) throw invalid(f.at('mode'), `does not apply to ${policy.type}, which always queues`);
  if (isLimiter && mode === 'refuse' && f.has('maxWaitMs'))
    throw invalid(f.at('maxWaitMs'), "applies only with mode 'wait' (refuse mode never waits)");
  const distribution = f.has('distribution')
    ? parseDistribution(f.raw('distribution'), f.at('distribution'), kindOf(policy.type))
    : (f.raw('distribution') as undefined);
  if (distribution?.lease !== undefined) checkLeasable(policy, mode, f);
  f.done();
  return { name, policy, mode, maxWaitMs, distribution };
}

/** Throws unless the library can lease `policy` in `mode` (its own refusal, at the policy's type). */
function checkLeasable(policy: PolicySpec, mode: LaneSpec['mode'], f: Fields): void {
  if (mode === 'wait')
    throw invalid(
      `${f.at('distribution')}.lease`,
      "does not apply with mode 'wait': waiting books future turns on the shared state, which a lease does not hold",
    );
  const algorithm = buildAlgorithm(policy as LimiterPolicySpec, f.at('policy'));
  try {
    leaseTermsOf(algorithm, leaseSettingsOf(undefined, 'lease'));
  } catch (error) {
    if (!(error instanceof FloodgateError) || error.code !== 'INVALID_OPTION') throw error;
    throw invalid(`${f.at('policy')}.type`, `cannot be leased: ${error.message}`);
  }
}

/** parsePolicy returns the checked policy at `path`; the library's own factories check it again when built. */
export function parsePolicy(value: unknown, path: string): PolicySpec {
  const f = new Fields(value, path);
  const type = f.choice('type', POLICY_TYPES);
  const spec = readPolicy(f, type);
  f.done();
  return spec;
}

function readPolicy(f: Fields, type: (typeof POLICY_TYPES)[number]): PolicySpec {
  const windowMs = () => f.number('windowMs', { min: 1, integer: true });
  switch (type) {
    case 'token-bucket':
      return { type, capacity: f.number('capacity', POSITIVE), refillPerSecond: f.number('refillPerSecond', POSITIVE) };
    case 'leaky-bucket':
      return { type, capacity: f.number('capacity', POSITIVE), leakPerSecond: f.number('leakPerSecond', POSITIVE) };
    case 'fixed-window':
    case 'sliding-window-log':
      return { type, limit: f.number('limit', POSITIVE), windowMs: windowMs() };
    case 'sliding-window-counter':
      return {
        type,
        limit: f.number('limit', POSITIVE),
        windowMs: windowMs(),
        subWindows: f.optionalNumber('subWindows', { min: 1, integer: true }),
      };
    case 'gcra':
      return {
        type,
        rate: f.number('rate', POSITIVE),
        periodMs: f.number('periodMs', POSITIVE),
        maxBurst: f.number('maxBurst', { min: 0, integer: true }),
      };
    case 'shaping-queue':
      return {
        type,
        intervalMs: f.number('intervalMs', POSITIVE),
        capacity: f.number('capacity', { min: 0, max: Infinity }),
      };
    case 'smooth-bursty':
      return {
        type,
        permitsPerSecond: f.number('permitsPerSecond', POSITIVE),
        maxBurstSeconds: f.number('maxBurstSeconds', { min: 0 }, 1),
      };
    case 'smooth-warming-up':
      return {
        type,
        permitsPerSecond: f.number('permitsPerSecond', POSITIVE),
        warmupMs: f.number('warmupMs', POSITIVE),
        coldFactor: f.number('coldFactor', { min: 1 }, 3),
      };
  }
}

type PolicyKind = 'limiter' | 'smooth' | 'queue';

function kindOf(type: PolicySpec['type']): PolicyKind {
  if ((LIMITER_POLICIES as readonly string[]).includes(type)) return 'limiter';
  return type === 'shaping-queue' ? 'queue' : 'smooth';
}

/**
 * A lane's nodes: on a shared store (a limiter policy, or a smooth one with `shared: true`), with
 * round trips, skews (not for a smooth limiter, which runs on the store's clock) and an outage;
 * or, for a policy that lives in one process, each with `share` of the rate and nothing else.
 */
function parseDistribution(value: unknown, path: string, kind: PolicyKind): DistributionSpec {
  const f = new Fields(value, path);
  const nodes = f.number('nodes', { min: 1, integer: true, max: 1000 });
  const shared = kind === 'limiter' || readShared(f, kind);
  if (kind !== 'limiter')
    for (const name of ['lease', 'weights', 'deaths'])
      if (f.has(name))
        throw invalid(
          f.at(name),
          'applies only to a limiter policy on a shared store (token-bucket, leaky-bucket, gcra or fixed-window leases)',
        );
  if (!shared) return parseLocalNodes(f, nodes);
  const leased = kind === 'limiter' ? parseLeasedFleet(f, nodes) : noLease(nodes);
  if (f.has('share'))
    throw invalid(f.at('share'), 'applies only to shaping-queue and smooth policies (an outage has its own share)');
  const roundTripMs = f.number('roundTripMs', { min: 0 }, 0);
  const roundTripJitterMs = f.number('roundTripJitterMs', { min: 0 }, 0);
  if (kind === 'smooth')
    for (const name of ['skewMs', 'maxSkewMs'])
      if (f.has(name))
        throw invalid(f.at(name), "does not apply to a shared smooth limiter: it reserves on the store's clock");
  const skewMs = kind === 'smooth' ? new Array<number>(nodes).fill(0) : readSkew(f, nodes);
  const outage = f.has('outage') ? parseOutage(f.raw('outage'), f.at('outage'), nodes) : (f.raw('outage') as undefined);
  f.done();
  return { nodes, roundTripMs, roundTripJitterMs, skewMs, outage, share: 1, shared: true, ...leased };
}

/** The lease fields of a fleet without leases: per-request decisions, requests handed out in turn, nobody dies. */
function noLease(nodes: number): Pick<DistributionSpec, 'lease' | 'weights' | 'deaths'> {
  return { lease: undefined, weights: new Array<number>(nodes).fill(1), deaths: [] };
}

/** A smooth policy's `shared` (default false: each node its own limiter); no other kind takes it. */
function readShared(f: Fields, kind: PolicyKind): boolean {
  if (!f.has('shared')) return false;
  const value = f.raw('shared');
  if (kind !== 'smooth')
    throw invalid(f.at('shared'), 'applies only to smooth policies (a shaping queue lives in each node)');
  if (typeof value !== 'boolean') throw invalid(f.at('shared'), 'must be true or false');
  return value;
}

function parseLocalNodes(f: Fields, nodes: number): DistributionSpec {
  for (const name of ['roundTripMs', 'roundTripJitterMs', 'skewMs', 'maxSkewMs', 'outage'])
    if (f.has(name))
      throw invalid(
        f.at(name),
        'applies only to a limiter policy on a shared store; a shaping queue or smooth limiter lives in each node, with `share` of the rate',
      );
  const share = f.number('share', { min: 0, above: true, max: 1 }, 1 / nodes);
  f.done();
  return {
    nodes,
    roundTripMs: 0,
    roundTripJitterMs: 0,
    skewMs: new Array<number>(nodes).fill(0),
    outage: undefined,
    share,
    shared: false,
    ...noLease(nodes),
  };
}

/** Skew is a list with one offset per node, or `maxSkewMs` spread evenly from -max to +max. */
function readSkew(f: Fields, nodes: number): number[] {
  if (f.has('skewMs') && f.has('maxSkewMs')) throw invalid(f.at('maxSkewMs'), 'cannot be given with skewMs');
  if (f.has('skewMs')) {
    const list = f.array('skewMs');
    if (list.length !== nodes)
      throw invalid(f.at('skewMs'), `must hold one offset per node (${nodes}), got ${list.length}`);
    return list.map((v, i) => {
      if (typeof v !== 'number' || !Number.isFinite(v))
        throw invalid(`${f.at('skewMs')}[${i}]`, 'must be a finite number of ms');
      return v;
    });
  }
  const max = f.number('maxSkewMs', { min: 0 }, 0);
  return Array.from({ length: nodes }, (_, i) => (nodes === 1 ? 0 : -max + (2 * max * i) / (nodes - 1)));
}

function parseOutage(value: unknown, path: string, nodes: number): OutageSpec {
  const f = new Fields(value, path);
  const startMs = f.number('startMs', { min: 0 });
  const endMs = f.number('endMs', { min: 0 });
  if (endMs <= startMs) throw invalid(f.at('endMs'), `must be after startMs (${startMs}), got ${endMs}`);
  const onError = f.choice('onError', ['fail-open', 'fail-closed', 'local'] as const);
  const share = f.number('share', { min: 0, above: true, max: 1 }, 1 / nodes);
  if (onError !== 'local' && f.has('share')) throw invalid(f.at('share'), "applies only with onError 'local'");
  const timeoutMs = f.number('timeoutMs', { min: 0 }, 0);
  f.done();
  return { startMs, endMs, onError, share, timeoutMs };
}
