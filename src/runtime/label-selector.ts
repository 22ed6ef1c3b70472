// A structured LabelSelector (matchLabels + matchExpressions) read against an
// object's labels as the API server reads it: every term must hold, and an
// empty selector selects everything. Capabilities that pick hosts or nodes by a
// selector in their spec (VM hosts, tenant clusters) share this one reading.

export interface SelectorRequirement {
  key: string;
  operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist';
  values?: readonly string[];
}

export interface LabelSelector {
  matchLabels?: Readonly<Record<string, string>>;
  matchExpressions?: readonly SelectorRequirement[];
}

/** True when the selector has no terms (and so, by the API's rule, selects everything). */
export function isEmptySelector(selector: LabelSelector): boolean {
  return (
    Object.keys(selector.matchLabels ?? {}).length === 0 && (selector.matchExpressions ?? []).length === 0
  );
}

export function matchesLabelSelector(
  selector: LabelSelector,
  labels: Readonly<Record<string, string>>,
): boolean {
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
