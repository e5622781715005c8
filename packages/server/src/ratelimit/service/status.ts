/**
 * The answer for one descriptor of a request, shared by the service that makes it and the writers
 * (headers, gRPC, JSON) that read it.
 */
import type { Decision } from 'floodgate';
import type { Rule } from './rule.js';

/** DescriptorStatus is the answer for one descriptor of a request, in request order. */
export interface DescriptorStatus {
  /** OVER_LIMIT only when this descriptor's limit refused and it is not in shadow mode. */
  readonly code: 'OK' | 'OVER_LIMIT';
  /** The limit that applied; undefined when none did (no rule, a replaced rule, or unlimited). */
  readonly rule: Rule | undefined;
  /** The policy's decision; undefined when no policy counted (no rule, unlimited, a limit of 0). */
  readonly decision: Decision | undefined;
  /** Hits left in the current unit (MAX_UINT32 when unlimited). */
  readonly limitRemaining: number;
  /** Until the limit is whole again (admitted) or the same request could pass (refused), in ms. */
  readonly durationUntilResetMs: number;
  /** True when the limit refused but shadow mode answered OK. */
  readonly shadowed: boolean;
  /** The metric name of the matched path (`domain.key_value...`), or undefined. */
  readonly metricKey: string | undefined;
}
