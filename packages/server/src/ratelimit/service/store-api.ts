/**
 * The store endpoint (`POST /v1/store`): a remote floodgate used as a store. A request names a
 * policy by its spec (`{ algorithm, params }`), which is rebuilt with the library's factories and
 * applied to the service's store (memory or Redis).
 */
import { FloodgateError, type Algorithm, type Decision, type PolicyStore } from 'floodgate';
import { FACTORIES, REMOTE_ALGORITHMS } from '../protocol/policy-spec.js';
import { DecisionError } from './request.js';
import type { RateLimitService } from './service.js';

/** MAX_REMOTE_POLICIES is how many distinct policy specs the store endpoint holds at once. */
export const MAX_REMOTE_POLICIES = 4096;

/** MAX_REMOTE_KEY_LENGTH is the longest key the store endpoint accepts, in characters. */
export const MAX_REMOTE_KEY_LENGTH = 1024;

/** MAX_REMOTE_BATCH is the most requests one `consumeAll` store request may carry. */
export const MAX_REMOTE_BATCH = 64;

function invalid(message: string, field: string): DecisionError {
  return new DecisionError('INVALID_REQUEST', message, field);
}

/** buildPolicy returns the policy `raw` describes, or throws a 400 naming the field at fault (after `where`, e.g. `requests[2].`). */
export function buildPolicy(raw: unknown, where = ''): Algorithm {
  try {
    return policyOf(raw);
  } catch (error) {
    if (where === '' || !(error instanceof DecisionError)) throw error;
    throw invalid(`${where}${error.message}`, `${where}${error.field ?? 'policy'}`);
  }
}

function policyOf(raw: unknown): Algorithm {
  const spec = raw as { algorithm?: unknown; params?: unknown } | null;
  if (typeof spec !== 'object' || spec === null)
    throw invalid('policy must be an object { algorithm, params }', 'policy');
  if (typeof spec.algorithm !== 'string' || !Object.hasOwn(FACTORIES, spec.algorithm)) {
    throw invalid(
      `policy.algorithm is ${JSON.stringify(spec.algorithm)}; expected one of ${REMOTE_ALGORITHMS.join(', ')}`,
      'policy.algorithm',
    );
  }
  const params = spec.params;
  if (typeof params !== 'object' || params === null || Array.isArray(params))
    throw invalid('policy.params must be an object of numbers', 'policy.params');
  for (const [name, value] of Object.entries(params)) {
    if (typeof value !== 'number' || !Number.isFinite(value))
      throw invalid(
        `policy.params.${name} must be a finite number, got ${JSON.stringify(value)}`,
        `policy.params.${name}`,
      );
  }
  let policy: Algorithm;
  try {
    policy = FACTORIES[spec.algorithm]!(params as never);
  } catch (error) {
    if (!(error instanceof FloodgateError)) throw error;
    const name = error.option?.split('.').pop();
    throw invalid(`policy.params: ${error.message}`, name === undefined ? 'policy.params' : `policy.params.${name}`);
  }
  for (const name of Object.keys(params)) {
    if (!Object.hasOwn(policy.params, name))
      throw invalid(
        `policy.params.${name} is not an option of ${spec.algorithm}; it takes ${Object.keys(policy.params).join(', ')}`,
        `policy.params.${name}`,
      );
  }
  return policy;
}

/**
 * StoreApi answers store requests on a {@link RateLimitService}'s store. Policies are cached by
 * their spec, at most {@link MAX_REMOTE_POLICIES}; a new spec past the cap is refused (400).
 */
export class StoreApi {
  private readonly tables = new Map<string, { policy: Algorithm; table: PolicyStore }>();

  constructor(private readonly service: RateLimitService) {}

  /** handle returns the JSON answer to one store request body. */
  async handle(body: unknown): Promise<Record<string, unknown>> {
    const request = body as { op?: unknown; policy?: unknown; key?: unknown; cost?: unknown } | null;
    if (typeof request !== 'object' || request === null)
      throw invalid('the body must be an object { op, policy, key, cost }', 'body');
    const op = request.op;
    if (op === 'consumeAll') return this.consumeAll((body as { requests?: unknown }).requests);
    if (op !== 'consume' && op !== 'peek' && op !== 'refund' && op !== 'reset')
      throw invalid(`op is ${JSON.stringify(op)}; expected consume, peek, refund, reset or consumeAll`, 'op');
    const { policy, table } = this.tableOf(request.policy);
    const key = keyOf(request.key, 'key');
    const cost = costOf(request.cost, 'cost');
    const nowMs = this.service.clock.now();
    switch (op) {
      case 'consume':
      case 'peek': {
        checkCost(policy, cost, 'cost');
        const decision: Decision = await (op === 'consume'
          ? table.consume(key, cost, nowMs)
          : table.peek(key, cost, nowMs));
        return { decision: wireDecision(decision) };
      }
      case 'refund':
        await table.refund(key, cost, nowMs);
        return { ok: true };
      default:
        await table.reset(key);
        return { ok: true };
    }
  }

  /**
   * consumeAll decides several requests together and charges them only when all are admitted: on
   * the store's own `consumeAll` (Redis: one script per slot), else, on synchronous tables (the
   * memory store), by looking at every one and then charging every one in the same step.
   */
  private async consumeAll(raw: unknown): Promise<Record<string, unknown>> {
    if (!Array.isArray(raw) || raw.length === 0 || raw.length > MAX_REMOTE_BATCH)
      throw invalid(`requests must be a list of 1 to ${MAX_REMOTE_BATCH} { policy, key, cost }`, 'requests');
    const items = raw.map((r: { policy?: unknown; key?: unknown; cost?: unknown } | null, i) => {
      if (typeof r !== 'object' || r === null)
        throw invalid(`requests[${i}] must be an object { policy, key, cost }`, `requests[${i}]`);
      const entry = this.tableOf(r.policy, `requests[${i}].`);
      const cost = costOf(r.cost, `requests[${i}].cost`);
      checkCost(entry.policy, cost, `requests[${i}].cost`);
      return { ...entry, key: keyOf(r.key, `requests[${i}].key`), cost };
    });
    const nowMs = this.service.clock.now();
    const store = this.service.store;
    if (typeof store.consumeAll === 'function') {
      const result = await store.consumeAll(
        items.map((x) => ({ policy: x.policy, key: x.key, cost: x.cost })),
        nowMs,
      );
      return { allowed: result.allowed, decisions: result.decisions.map(wireDecision) };
    }
    if (!items.every((x) => x.table.synchronous))
      throw new DecisionError(
        'STORE_FAILED',
        'this store cannot decide several requests together; send them one by one',
      );
    const looks = items.map((x) => x.table.peek(x.key, x.cost, nowMs) as Decision);
    if (!looks.every((d) => d.allowed)) return { allowed: false, decisions: looks.map(wireDecision) };
    return {
      allowed: true,
      decisions: items.map((x) => wireDecision(x.table.consume(x.key, x.cost, nowMs) as Decision)),
    };
  }

  private tableOf(raw: unknown, where = ''): { policy: Algorithm; table: PolicyStore } {
    const policy = buildPolicy(raw, where);
    const id = `${policy.name}:${JSON.stringify(policy.params)}`;
    let entry = this.tables.get(id);
    if (entry === undefined) {
      if (this.tables.size >= MAX_REMOTE_POLICIES)
        throw invalid(
          `the store endpoint already holds ${MAX_REMOTE_POLICIES} policies; no new policy is accepted`,
          'policy',
        );
      entry = { policy, table: this.service.store.bind(policy) };
      this.tables.set(id, entry);
    }
    return entry;
  }
}

function checkCost(policy: Algorithm, cost: number, field: string): void {
  try {
    policy.checkCost(cost);
  } catch (error) {
    if (error instanceof FloodgateError) throw invalid(`${field}: ${error.message}`, field);
    throw error;
  }
}

function keyOf(key: unknown, field: string): string {
  if (typeof key !== 'string' || key.length === 0 || key.length > MAX_REMOTE_KEY_LENGTH)
    throw invalid(`${field} must be a string of 1 to ${MAX_REMOTE_KEY_LENGTH} characters`, field);
  return key;
}

function costOf(raw: unknown, field: string): number {
  const cost = raw ?? 1;
  if (typeof cost !== 'number' || !Number.isFinite(cost) || cost < 0)
    throw invalid(`${field} must be a finite number of at least 0, got ${JSON.stringify(cost)}`, field);
  return cost;
}

/** wireDecision returns `decision` as JSON can carry it (an infinite wait as null). */
function wireDecision(d: Decision): Record<string, unknown> {
  return {
    allowed: d.allowed,
    limit: d.limit,
    remaining: d.remaining,
    retryAfterMs: Number.isFinite(d.retryAfterMs) ? d.retryAfterMs : null,
    resetMs: Number.isFinite(d.resetMs) ? d.resetMs : null,
    reason: d.reason,
  };
}
