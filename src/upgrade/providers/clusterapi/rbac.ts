// What the clusterapi provider reads and writes, for `nodewarden manifests`:
// Cluster API's MachineDeployments, MachineSets and Machines, the CRDs it reads
// a provider kind's version from, and the infrastructure templates (read,
// cloned) and machines (read, listed) of the providers whose image field it knows. A
// kind given with --clusterapi-image-path needs the same rules added for it.
import type { PolicyRule } from '../../../runtime/policy-rule.ts';
import { KNOWN_IMAGE_PATHS } from './image-paths.ts';

const INFRA_GROUPS = ['infrastructure.cluster.x-k8s.io', 'infrastructure.nodewarden.dev'];
const plural = (kind: string) => `${kind.toLowerCase()}s`;
const templateKinds = Object.keys(KNOWN_IMAGE_PATHS);

export const clusterApiRbac: PolicyRule[] = [
  { apiGroups: ['cluster.x-k8s.io'], resources: ['machinedeployments'], verbs: ['get', 'list', 'patch'] },
  { apiGroups: ['cluster.x-k8s.io'], resources: ['machinesets'], verbs: ['list', 'patch'] },
  { apiGroups: ['cluster.x-k8s.io'], resources: ['machines'], verbs: ['get', 'list', 'patch'] },
  { apiGroups: ['apiextensions.k8s.io'], resources: ['customresourcedefinitions'], verbs: ['get'] },
  { apiGroups: INFRA_GROUPS, resources: templateKinds.map(plural), verbs: ['get', 'create'] },
  {
    apiGroups: INFRA_GROUPS,
    resources: templateKinds.map((k) => plural(k.replace(/Template$/, ''))),
    // list: a group's machines are read in one request per round, not one each.
    verbs: ['get', 'list'],
  },
];
