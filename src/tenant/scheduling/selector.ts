// A Kubernetes LabelSelector read against a host's labels, as the API server
// reads it: matchLabels and matchExpressions all hold; an empty selector
// selects everything (the anchor's behaviour for an empty labelSelector).
import type { NodeSetSpec } from '../../api/tenant.ts';
import { matchesLabelSelector } from '../../runtime/label-selector.ts';

type LabelSelector = NonNullable<NodeSetSpec['labelSelector']>;

export function selectorMatches(
  selector: LabelSelector | undefined,
  labels: Record<string, string>,
): boolean {
  return !selector || matchesLabelSelector(selector, labels);
}
