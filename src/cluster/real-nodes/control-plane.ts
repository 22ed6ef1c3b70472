// What a control plane needs to have real nodes, given when kwokctl creates
// it: the API server's way into the cluster's network (egress selector over
// the relay's CONNECT proxy), its advertised address on the cluster bridge (the
// `kubernetes` Service's endpoint, which pods reach through kube-proxy), the
// client certificate it shows kubelets, and serving-certificate names pods and
// nodes use. kwok is told to leave real nodes to their kubelets.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { egressSelectorConfig } from './configs.ts';
import { CLUSTER_GATEWAY, KUBERNETES_SERVICE_IP, REAL_NODE_LABEL, type RealNodesLayout } from './layout.ts';

/** Additions to kwokctl's configuration of one cluster. */
export interface ControlPlaneAdditions {
  certSans: string[];
  /** component name → flag → value */
  extraArgs: Record<string, Record<string, string>>;
}

/** Writes the egress selector's file and returns what kwokctl must add; `clusterDir` as kwokctl names it. */
export function controlPlaneForRealNodes(layout: RealNodesLayout, clusterDir: string): ControlPlaneAdditions {
  mkdirSync(layout.dir, { recursive: true });
  const egress = join(layout.dir, 'egress-selector.yaml');
  writeFileSync(egress, `${JSON.stringify(egressSelectorConfig(layout), null, 2)}\n`);
  const pki = join(clusterDir, 'pki');
  return {
    certSans: [KUBERNETES_SERVICE_IP, CLUSTER_GATEWAY],
    extraArgs: {
      'kube-apiserver': {
        'advertise-address': CLUSTER_GATEWAY,
        'egress-selector-config-file': egress,
        // Else the API server resolves node names through the host's resolver: a query off loopback.
        'kubelet-preferred-address-types': 'InternalIP',
        // kwokctl's admin certificate (system:masters), signed by the CA kubelets trust.
        'kubelet-client-certificate': join(pki, 'admin.crt'),
        'kubelet-client-key': join(pki, 'admin.key'),
        // Webhooks and aggregated APIs dialled at the pod's address: the proxy's namespace has no
        // kube-proxy rules for Service addresses.
        'enable-aggregator-routing': 'true',
      },
      'kwok-controller': {
        'manage-all-nodes': 'false',
        'manage-nodes-with-label-selector': `!${REAL_NODE_LABEL}`,
      },
    },
  };
}
