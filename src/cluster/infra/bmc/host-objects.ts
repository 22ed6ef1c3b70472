// What a physical machine looks like in the cluster, as metal3 expects to
// find it: a BareMetalHost in namespace metal3 labelled with its rack, its BMC
// credentials Secret, and its OpenStack network_data Secret. Pure manifests;
// the add-on applies them (server-side apply, so every `up` may).
import { RACK_LABEL } from '../../../api/baremetal.ts';
import { OAM_NETWORK } from './physical-hosts.ts';
import type { Machine } from './protocol.ts';

/** Where the fleet's physical hosts live in the cluster. */
export const HOSTS_NAMESPACE = 'metal3';

const MANAGED = { 'app.kubernetes.io/managed-by': 'nodewarden-cluster' };

export function credentialsSecretName(id: string): string {
  return `${id}-bmc-secret`;
}

export function networkDataSecretName(id: string): string {
  return `${id}-network-data`;
}

export function namespaceManifest() {
  return { apiVersion: 'v1', kind: 'Namespace', metadata: { name: HOSTS_NAMESPACE, labels: MANAGED } };
}

export function credentialsSecret(m: Machine) {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: credentialsSecretName(m.id), namespace: HOSTS_NAMESPACE, labels: MANAGED },
    type: 'Opaque',
    stringData: { username: m.credentials.username, password: m.credentials.password },
  };
}

/** OpenStack network_data.json: each NIC a link, the first NIC's address on the oam-ipv4 network. */
export function networkData(m: Machine) {
  const links = m.nics.map((n) => ({ id: n.name, type: 'phy', ethernet_mac_address: n.mac, mtu: 1500 }));
  const networks = m.nics
    .filter((n) => n.ip && !n.ip.includes(':'))
    .map((n, i) => ({
      id: i === 0 ? 'oam-ipv4' : `oam-ipv4-${i}`,
      type: 'ipv4',
      link: n.name,
      ip_address: n.ip,
      netmask: OAM_NETWORK.netmask,
      routes: i === 0 ? [{ network: '0.0.0.0', netmask: '0.0.0.0', gateway: OAM_NETWORK.gateway }] : [],
    }));
  return { links, networks, services: [{ type: 'dns', address: OAM_NETWORK.gateway }] };
}

export function networkDataSecret(m: Machine) {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: networkDataSecretName(m.id), namespace: HOSTS_NAMESPACE, labels: MANAGED },
    type: 'Opaque',
    stringData: { networkData: JSON.stringify(networkData(m)) },
  };
}

/** The host's fields this fleet owns (server-side apply leaves the rest, status included, to others). */
export function bareMetalHost(m: Machine) {
  return {
    apiVersion: 'metal3.io/v1alpha1',
    kind: 'BareMetalHost',
    metadata: {
      name: m.id,
      namespace: HOSTS_NAMESPACE,
      labels: { ...MANAGED, ...(m.rack ? { [RACK_LABEL]: m.rack } : {}) },
    },
    spec: {
      bmc: {
        address: m.bmcAddress,
        credentialsName: credentialsSecretName(m.id),
        disableCertificateVerification: true,
      },
      bootMACAddress: m.nics[0]?.mac,
      networkData: { name: networkDataSecretName(m.id), namespace: HOSTS_NAMESPACE },
      online: true,
    },
  };
}
