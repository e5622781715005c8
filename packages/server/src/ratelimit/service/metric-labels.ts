/**
 * Bounding the `descriptor` label of the rate limit service's metrics. Labels name configured
 * paths (a wildcard by its pattern), so a config bounds them; only `detailed_metric` and
 * `value_to_metric` put request values into them, and those are capped here.
 */
import type { DescriptorOutcome } from './outcome.js';

/** MAX_DESCRIPTOR_LABELS is how many distinct (domain, descriptor) labels are kept; later ones count as `other`. */
export const MAX_DESCRIPTOR_LABELS = 2_000;

/** DescriptorLabels hands out the `descriptor` label of each outcome, at most {@link MAX_DESCRIPTOR_LABELS} distinct ones. */
export class DescriptorLabels {
  private readonly seen = new Set<string>();

  constructor(private readonly max = MAX_DESCRIPTOR_LABELS) {}

  /** labelOf returns `outcome.descriptor`, or `other` once the cap is reached by other labels. */
  labelOf(outcome: DescriptorOutcome): string {
    const id = `${outcome.domain}\u0000${outcome.descriptor}`;
    if (this.seen.has(id)) return outcome.descriptor;
    if (this.seen.size >= this.max) return 'other';
    this.seen.add(id);
    return outcome.descriptor;
  }
}

/** outcomeLabel returns the `outcome` label: the outcome, `peek_` before it when the descriptor only asked. */
export function outcomeLabel(outcome: DescriptorOutcome): string {
  return outcome.peek ? `peek_${outcome.outcome}` : outcome.outcome;
}
