// A Kubernetes LabelSelector read against a host's labels, as the API server
// reads it: matchLabels and matchExpressions all hold; an empty selector
// selects everything (the anchor's behaviour for an empty labelSelector).
import type { NodeSetSpec } from '../../api/tenant.ts';

type LabelSelector = NonNullable<NodeSetSpec['labelSelector']>;

export function selectorMatches(
  selector: LabelSelector | undefined,
  labels: Record<string, string>,
): boolean {
  if (!selector) return true;
  for (const [k, v] of Object.entries(selector.matchLabels ?? {})) if (labels[k] !== v) return false;
  return (selector.matchExpressions ?? []).every((r) => {
    const has = Object.hasOwn(labels, r.key);
    const values = r.values ?? [];
    switch (r.operator) {
      case 'In':
        return has && values.includes(labels[r.key]!);
      case 'NotIn':
        return !has || !values.includes(labels[r.key]!);
      case 'Exists':
        return has;
      case 'DoesNotExist':
        return !has;
    }
    return false;
  });
}
