// An RBAC rule as data: a controller declares the rules it needs next to its
// code (as kubebuilder's markers do) and `make manifests` merges them.
export interface PolicyRule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
  resourceNames?: string[];
}
