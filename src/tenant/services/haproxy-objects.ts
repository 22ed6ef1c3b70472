// One HAProxy load balancer as Kubernetes objects: its haproxy.cfg in a
// Secret mounted where HAProxy's image reads it, a one-replica Deployment
// placed as spec.placement says (placement.ts: any node by default, where the
// anchor pinned its load balancers to control-plane nodes), and a NodePort Service. The pod template carries the config's
// digest: HAProxy reads its config once, so a new config must roll the pod.
import { HAPROXY_CONFIG_DIR } from '../../api/service-images.ts';
import type { K8sObject } from '../../runtime/resources.ts';
import type { ServicePlacementSpec, TenantCluster } from './inputs.ts';
import {
  CONFIG_HASH_ANNOTATION,
  digest,
  objectMeta,
  type ServiceComponent,
  secretData,
  selectorLabels,
} from './objects.ts';
import { podPlacement } from './placement.ts';

/** Pinned, so a re-render never changes the pods by itself; a spec's image wins. */
export const DEFAULT_HAPROXY_IMAGE = 'haproxy:3.2.6';

export interface HAProxyPort {
  name: string;
  /** The port HAProxy binds in the pod (a frontend's bind). */
  containerPort: number;
  /** The Service's port. */
  port: number;
  nodePort: number;
}

export interface HAProxyLoadBalancer {
  component: ServiceComponent;
  config: string;
  image: string | undefined;
  placement: ServicePlacementSpec | undefined;
  ports: readonly HAProxyPort[];
}

export function haproxyObjects(tc: TenantCluster, lb: HAProxyLoadBalancer): K8sObject[] {
  const name = objectMeta(tc, lb.component).name;
  // A fresh metadata per object: a caller that edits one must not edit the others.
  const meta = () => objectMeta(tc, lb.component);
  const selector = selectorLabels(tc, lb.component);
  const probe = { tcpSocket: { port: lb.ports[0]?.containerPort ?? 0 }, periodSeconds: 10 };
  const secret: K8sObject = {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: meta(),
    type: 'Opaque',
    data: secretData({ 'haproxy.cfg': lb.config }),
  };
  const deployment: K8sObject = {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: meta(),
    spec: {
      replicas: 1,
      selector: { matchLabels: selector },
      template: {
        metadata: { labels: meta().labels, annotations: { [CONFIG_HASH_ANNOTATION]: digest(lb.config) } },
        spec: {
          ...podPlacement(lb.placement),
          containers: [
            {
              name: 'haproxy',
              image: lb.image ?? DEFAULT_HAPROXY_IMAGE,
              command: ['haproxy', '-f', `${HAPROXY_CONFIG_DIR}/haproxy.cfg`],
              ports: lb.ports.map((p) => ({ name: p.name, containerPort: p.containerPort, protocol: 'TCP' })),
              readinessProbe: probe,
              livenessProbe: { ...probe, failureThreshold: 6 },
              resources: { requests: { cpu: '50m', memory: '64Mi' } },
              securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } },
              volumeMounts: [{ name: 'config', mountPath: HAPROXY_CONFIG_DIR, readOnly: true }],
            },
          ],
          volumes: [{ name: 'config', secret: { secretName: name } }],
        },
      },
    },
  };
  const service: K8sObject = {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: meta(),
    spec: {
      type: 'NodePort',
      selector,
      ports: lb.ports.map((p) => ({
        name: p.name,
        protocol: 'TCP',
        port: p.port,
        targetPort: p.containerPort,
        nodePort: p.nodePort,
      })),
    },
  };
  return [secret, deployment, service];
}
