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
  // By domain, then descriptor: no string is built per call to look a label up.
  private readonly seen = new Map<string, Set<string>>();
  private size = 0;

  constructor(private readonly max = MAX_DESCRIPTOR_LABELS) {}

  /** labelOf returns `outcome.descriptor`, or `other` once the cap is reached by other labels. */
  labelOf(outcome: DescriptorOutcome): string {
    let descriptors = this.seen.get(outcome.domain);
    if (descriptors?.has(outcome.descriptor) === true) return outcome.descriptor;
    if (this.size >= this.max) return 'other';
    if (descriptors === undefined) this.seen.set(outcome.domain, (descriptors = new Set()));
    descriptors.add(outcome.descriptor);
    this.size++;
    return outcome.descriptor;
  }
}

const PEEK_LABELS = new Map<string, string>();

/** outcomeLabel returns the `outcome` label: the outcome, `peek_` before it when the descriptor only asked. */
export function outcomeLabel(outcome: DescriptorOutcome): string {
  if (!outcome.peek) return outcome.outcome;
  let label = PEEK_LABELS.get(outcome.outcome);
  if (label === undefined) PEEK_LABELS.set(outcome.outcome, (label = `peek_${outcome.outcome}`));
  return label;
}
