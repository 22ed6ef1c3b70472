// A VM's networkData (what cloud-init or Ironic's config drive reads to set up
// its NICs), rendered from its flavor's template Secret, or in OpenStack's
// network_data.json form when the flavor names no template. Pure.
//
// Template variables, written {{ path }} (spaces optional); an unknown one is
// an error naming it, never an empty string:
//   vm.name vm.namespace vm.pool vm.node vm.flavor vm.index vm.bootMAC
//   interfaces.<nic>.ip .mac .mtu .network .prefix .netmask .gateway
//   networks.<network>.subnet .prefix .netmask .gateway .dns .bridgeIP
// `gateway` is the default route's gateway (a route to 0.0.0.0 or ::), with
// "$vinobridge" standing for the node's bridge address as in the anchor; the
// bridge address when there is no default route. `dns` is comma-separated.
import type { NetworkSpec } from '../../api/virtualhosts.ts';
import { netmaskOf, parseCidr } from '../ipam/address.ts';

export const BRIDGE_GATEWAY = '$vinobridge';

export interface NicAddress {
  nic: string;
  network: string;
  ip: string;
  mac: string;
  mtu?: number;
}

export interface NetworkDataInput {
  vm: {
    name: string;
    namespace: string;
    pool: string;
    node: string;
    flavor: string;
    index: number;
    bootMAC: string;
  };
  nics: readonly NicAddress[];
  networks: readonly NetworkSpec[];
  /** The node's bridge address per network. */
  bridgeIPs: Readonly<Record<string, string>>;
}

function gatewayOf(net: NetworkSpec, bridge: string | undefined): string | undefined {
  const route = (net.routes ?? []).find((r) => r.network === '0.0.0.0' || r.network === '::');
  const gw = route?.gateway ?? bridge;
  return gw === BRIDGE_GATEWAY ? bridge : gw;
}

/** The values the template may name, flattened to their dotted paths. */
export function templateValues(input: NetworkDataInput): Map<string, string> {
  const out = new Map<string, string>();
  const put = (path: string, v: string | number | undefined) => {
    if (v !== undefined) out.set(path, String(v));
  };
  for (const [k, v] of Object.entries(input.vm)) put(`vm.${k}`, v);
  for (const net of input.networks) {
    const c = parseCidr(net.subnet);
    const bridge = input.bridgeIPs[net.name];
    put(`networks.${net.name}.subnet`, net.subnet);
    put(`networks.${net.name}.prefix`, c?.prefix);
    put(`networks.${net.name}.netmask`, c && netmaskOf(c));
    put(`networks.${net.name}.gateway`, gatewayOf(net, bridge));
    put(`networks.${net.name}.dns`, (net.dnsServers ?? []).join(','));
    put(`networks.${net.name}.bridgeIP`, bridge);
  }
  for (const nic of input.nics) {
    const net = input.networks.find((n) => n.name === nic.network);
    const c = net && parseCidr(net.subnet);
    put(`interfaces.${nic.nic}.ip`, nic.ip);
    put(`interfaces.${nic.nic}.mac`, nic.mac);
    put(`interfaces.${nic.nic}.mtu`, nic.mtu ?? 1500);
    put(`interfaces.${nic.nic}.network`, nic.network);
    put(`interfaces.${nic.nic}.prefix`, c?.prefix);
    put(`interfaces.${nic.nic}.netmask`, c && netmaskOf(c));
    put(`interfaces.${nic.nic}.gateway`, net && gatewayOf(net, input.bridgeIPs[net.name]));
  }
  return out;
}

/** Fills the template's {{ path }} variables; throws naming the first unknown one. */
export function renderTemplate(template: string, input: NetworkDataInput): string {
  const values = templateValues(input);
  return template.replace(/\{\{\s*([A-Za-z0-9_.-]+)\s*\}\}/g, (_, path: string) => {
    const v = values.get(path);
    if (v === undefined)
      throw new Error(`unknown variable {{ ${path} }}; known: ${[...values.keys()].sort().join(', ')}`);
    return v;
  });
}

/** OpenStack network_data.json for the VM's NICs: links, networks with routes, DNS services. */
export function defaultNetworkData(input: NetworkDataInput): string {
  const links = input.nics.map((n) => ({
    id: n.nic,
    type: 'phy',
    ethernet_mac_address: n.mac,
    mtu: n.mtu ?? 1500,
  }));
  const networks = input.nics.map((n) => {
    const net = input.networks.find((x) => x.name === n.network);
    const c = net && parseCidr(net.subnet);
    const bridge = net && input.bridgeIPs[net.name];
    const routes = (net?.routes ?? []).map((r) => ({
      network: r.network,
      netmask: r.netmask,
      gateway: r.gateway === BRIDGE_GATEWAY ? bridge : r.gateway,
    }));
    return {
      id: `${n.nic}-${n.network}`,
      link: n.nic,
      type: c?.family === 6 ? 'ipv6' : 'ipv4',
      ip_address: n.ip,
      netmask: c ? netmaskOf(c) : undefined,
      routes,
    };
  });
  const dns = [...new Set(input.networks.flatMap((n) => n.dnsServers ?? []))];
  const services = dns.map((address) => ({ type: 'dns', address }));
  return JSON.stringify({ links, networks, services });
}
