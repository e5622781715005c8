/**
 * A domain's `smooth_limits:` section: Guava's smooth limiters (bursty, or warming up), which
 * `POST /v1/reserve` answers with a wait instead of a refusal, so that callers pace themselves.
 *
 * ```yaml
 * smooth_limits:
 *   - name: partner-api
 *     permits_per_second: 20
 *     max_burst_seconds: 1        # bursty (the default: Guava's RateLimiter.create(20))
 *   - name: search-backend
 *     permits_per_second: 5
 *     warmup_ms: 10000            # warming up (Guava's create(5, 10 s)), with cold_factor (default 3)
 * ```
 */
import { isScalar, isSeq, type Node } from 'yaml';
import { join, type Reader } from './config-reader.js';

/** SmoothLimitSpec is one smooth limit: its name in the domain, its rate and its kind. */
export interface SmoothLimitSpec {
  readonly name: string;
  readonly permitsPerSecond: number;
  /** Bursty with `maxBurstSeconds` of storable permits, or warming up over `warmupMs` with a cold factor. */
  readonly model:
    | { readonly kind: 'bursty'; readonly maxBurstSeconds: number }
    | { readonly kind: 'warmingUp'; readonly warmupMs: number; readonly coldFactor: number };
  /** Where it is written, as `file:line:column`, for messages. */
  readonly at: string;
}

const KEYS = ['name', 'permits_per_second', 'max_burst_seconds', 'warmup_ms', 'cold_factor'];
const NAME = /^[A-Za-z0-9_.-]{1,64}$/;

/** smoothLimitId returns what identifies a limit's behaviour: a reload keeps the state of a limit whose id did not change. */
export function smoothLimitId(spec: SmoothLimitSpec): string {
  const m = spec.model;
  return m.kind === 'bursty'
    ? `${spec.name}/${spec.permitsPerSecond}/b${m.maxBurstSeconds}`
    : `${spec.name}/${spec.permitsPerSecond}/w${m.warmupMs}/${m.coldFactor}`;
}

function numberAtLeast(reader: Reader, node: Node | null | undefined, path: string, least: number): number | undefined {
  const v = isScalar(node) ? node.value : undefined;
  if (typeof v === 'number' && Number.isFinite(v) && v >= least) return v;
  return reader.fail(node, path, `must be a finite number, at least ${least}`);
}

function readSmoothLimit(reader: Reader, node: Node | null, path: string): SmoothLimitSpec | undefined {
  const f = reader.fields(node, path, KEYS);
  if (f === undefined) return undefined;
  const name = f.has('name') ? reader.text(f.get('name'), join(path, 'name'), 'a name') : undefined;
  if (name === undefined && !f.has('name')) reader.fail(node, join(path, 'name'), 'is required');
  else if (name !== undefined && !NAME.test(name))
    reader.fail(f.get('name'), join(path, 'name'), 'must be 1 to 64 of A-Z a-z 0-9 _ . -');
  const rate = f.has('permits_per_second')
    ? reader.positive(f.get('permits_per_second'), join(path, 'permits_per_second'))
    : reader.fail(node, join(path, 'permits_per_second'), 'is required: a number of permits per second above 0');
  let model: SmoothLimitSpec['model'] | undefined;
  if (f.has('warmup_ms')) {
    if (f.has('max_burst_seconds'))
      reader.fail(
        f.get('max_burst_seconds'),
        join(path, 'max_burst_seconds'),
        'is for a bursty limit; remove it or warmup_ms',
      );
    const warmupMs = numberAtLeast(reader, f.get('warmup_ms'), join(path, 'warmup_ms'), 0.001);
    const coldFactor = f.has('cold_factor')
      ? numberAtLeast(reader, f.get('cold_factor'), join(path, 'cold_factor'), 1)
      : 3;
    if (warmupMs !== undefined && coldFactor !== undefined) model = { kind: 'warmingUp', warmupMs, coldFactor };
  } else {
    if (f.has('cold_factor'))
      reader.fail(f.get('cold_factor'), join(path, 'cold_factor'), 'is for a warming-up limit: give warmup_ms too');
    const maxBurstSeconds = f.has('max_burst_seconds')
      ? numberAtLeast(reader, f.get('max_burst_seconds'), join(path, 'max_burst_seconds'), 0)
      : 1;
    if (maxBurstSeconds !== undefined) model = { kind: 'bursty', maxBurstSeconds };
  }
  if (name === undefined || !NAME.test(name) || rate === undefined || model === undefined) return undefined;
  return { name, permitsPerSecond: rate, model, at: reader.where(node as Node) };
}

/** readSmoothLimits returns a domain's smooth limits, reporting each bad field and a name given twice. */
export function readSmoothLimits(reader: Reader, node: Node | null | undefined, path: string): SmoothLimitSpec[] {
  if (node === undefined || (isScalar(node) && node.value === null)) return [];
  if (!isSeq(node)) {
    reader.fail(node, path, 'must be a list of smooth limits ({ name, permits_per_second, ... })');
    return [];
  }
  const out: SmoothLimitSpec[] = [];
  node.items.forEach((item, i) => {
    const spec = readSmoothLimit(reader, item as Node | null, join(path, i));
    if (spec === undefined) return;
    const first = out.find((s) => s.name === spec.name);
    if (first !== undefined)
      reader.fail(
        item as Node,
        join(join(path, i), 'name'),
        `${JSON.stringify(spec.name)} is already defined at ${first.at}`,
      );
    else out.push(spec);
  });
  return out;
}
