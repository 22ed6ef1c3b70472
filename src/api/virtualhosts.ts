// baremetal.nodewarden.dev/v1alpha1: bare-metal hosts carved out of hypervisor
// nodes. A VirtualHostPool says which nodes host VMs, which networks they
// share and which VMs (flavors) each node gets; the controller makes each VM a
// BareMetalHost. IPPool is the address book of one network of one pool: its
// ranges, its MAC prefix and who holds which address.
// Parity anchor: Airship ViNO's Vino and IPPool (../shared/reference/baremetal.md
// §4). Unlike the anchor, a nil node selector, a bad CIDR or a range outside its
// subnet is refused here (CEL), an inverted range by the webhook
// (src/baremetal/virtualhosts/webhook.ts), and addresses are released.
import Type from 'typebox';
import { defineCustomResource, type ResourceOf } from './crd.ts';
import { IPPoolKind, VirtualHostPoolKind } from './kinds.ts';
import { Condition } from './maintenance.ts';
import { cel, immutable } from './openapi.ts';
import { LabelSelectorSchema } from './selectors.ts';

export const VIRTUAL_HOSTS_GROUP = VirtualHostPoolKind.group;

export const DEFAULT_MAC_PREFIX = '02:00:00:00:00:00';
const MAC_PATTERN = '^([0-9a-f]{2}:){5}[0-9a-f]{2}$';
/** Long enough for any IPv6 address or CIDR in text form. */
const ADDRESS = { maxLength: 64 } as const;
const NAME = { minLength: 1, maxLength: 63, pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$' } as const;

const Conditions = Type.Array(Condition, {
  'x-kubernetes-list-type': 'map',
  'x-kubernetes-list-map-keys': ['type'],
});

// ----------------------------------------------------------- shared pieces

const Cidr = (description: string) =>
  Type.String({
    description,
    ...ADDRESS,
    ...cel({ rule: 'isCIDR(self)', message: 'must be a CIDR such as 192.168.2.0/24 or fd00:10::/64' }),
  });

const Address = (description: string) =>
  Type.String({
    description,
    ...ADDRESS,
    ...cel({ rule: 'isIP(self)', message: 'must be an IP address such as 192.168.2.10 or fd00:10::10' }),
  });

/** A CEL rule: `field`, when set, is an address inside `subnet`. */
const inSubnet = (field: string, subnet = 'self.subnet') => ({
  rule: `!has(self.${field}) || !isCIDR(${subnet}) || !isIP(self.${field}) || cidr(${subnet}).containsIP(self.${field})`,
  message: `${field} must be an address inside subnet`,
  fieldPath: `.${field}`,
});

export const NodeSelector = LabelSelectorSchema({
  description: 'The hypervisor nodes, as a label selector. Required and never empty.',
  ...cel({
    rule:
      '(has(self.matchLabels) && size(self.matchLabels) > 0) || ' +
      '(has(self.matchExpressions) && size(self.matchExpressions) > 0)',
    message:
      'nodeSelector selects every node: give matchLabels or matchExpressions naming the hypervisor nodes',
  }),
});

// ----------------------------------------------------------- VirtualHostPool

export const Route = Type.Object({
  network: Type.String({ description: 'Destination network address, e.g. 10.0.0.0.', ...ADDRESS }),
  netmask: Type.String({ description: 'e.g. 255.255.255.0, or a prefix length for IPv6.', ...ADDRESS }),
  gateway: Type.String({
    description: 'The next hop; "$vinobridge" stands for the hypervisor node\'s bridge address.',
    ...ADDRESS,
  }),
});

export const Network = Type.Object(
  {
    name: Type.String({ description: "Referred to by flavors' networkInterfaces.", ...NAME }),
    subnet: Cidr('The network, e.g. 192.168.2.0/20.'),
    type: Type.Optional(
      Type.Union([Type.Literal('ipv4'), Type.Literal('ipv6')], {
        description: "The subnet's family.",
        default: 'ipv4',
      }),
    ),
    staticAllocationStart: Address('First address handed to bridges and VMs.'),
    staticAllocationStop: Address('Last address handed to bridges and VMs (inclusive).'),
    dhcpAllocationStart: Type.Optional(Address('First address of the range cut into per-node DHCP ranges.')),
    dhcpAllocationStop: Type.Optional(Address('Last address of the DHCP range (inclusive).')),
    instanceSubnetBitStep: Type.Optional(
      Type.Integer({
        description: 'Each node gets 2^instanceSubnetBitStep addresses of the DHCP range.',
        minimum: 1,
        maximum: 16,
        default: 4,
      }),
    ),
    routes: Type.Optional(Type.Array(Route, { maxItems: 32 })),
    dnsServers: Type.Optional(Type.Array(Type.String(ADDRESS), { maxItems: 8 })),
    macPrefix: Type.Optional(
      Type.String({
        description: 'MACs of this network count up from here. Immutable once the IPPool exists.',
        pattern: MAC_PATTERN,
        default: DEFAULT_MAC_PREFIX,
      }),
    ),
    bridgeName: Type.Optional(Type.String({ maxLength: 15 })),
    physicalInterface: Type.Optional(Type.String({ maxLength: 15 })),
  },
  {
    'x-kubernetes-validations': [
      inSubnet('staticAllocationStart'),
      inSubnet('staticAllocationStop'),
      inSubnet('dhcpAllocationStart'),
      inSubnet('dhcpAllocationStop'),
      {
        rule: 'has(self.dhcpAllocationStart) == has(self.dhcpAllocationStop)',
        message: 'give both dhcpAllocationStart and dhcpAllocationStop, or neither',
      },
      {
        rule: "!isCIDR(self.subnet) || cidr(self.subnet).ip().family() == ((has(self.type) && self.type == 'ipv6') ? 6 : 4)",
        message: "subnet's family does not match type (ipv4 or ipv6)",
      },
    ],
  },
);

export const NetworkInterface = Type.Object({
  name: Type.String({ description: 'The NIC name inside the VM, e.g. enp1s0.', minLength: 1, maxLength: 15 }),
  network: Type.String({ description: 'One of spec.networks[].name.', ...NAME }),
  mtu: Type.Optional(Type.Integer({ minimum: 576, maximum: 9216 })),
});

export const Flavor = Type.Object({
  name: Type.String({ description: "The flavor (VM set) name, part of each VM's name.", ...NAME }),
  count: Type.Integer({
    description: 'VMs of this flavor on each hypervisor node.',
    minimum: 0,
    maximum: 64,
  }),
  cpus: Type.Optional(Type.Integer({ minimum: 1, maximum: 256, default: 1 })),
  memoryMiB: Type.Optional(Type.Integer({ minimum: 64, maximum: 4194304, default: 2048 })),
  diskGB: Type.Optional(Type.Integer({ minimum: 1, maximum: 65536, default: 10 })),
  bmhLabels: Type.Optional(
    Type.Record(Type.String(), Type.String({ maxLength: 63 }), {
      description: 'Labels for every BareMetalHost of this flavor (over the copied node labels).',
      maxProperties: 32,
    }),
  ),
  networkInterfaces: Type.Array(NetworkInterface, {
    minItems: 1,
    maxItems: 8,
    'x-kubernetes-list-type': 'map',
    'x-kubernetes-list-map-keys': ['name'],
  }),
  networkDataTemplate: Type.Optional(
    Type.Object(
      {
        name: Type.String({ minLength: 1, maxLength: 253 }),
        namespace: Type.Optional(Type.String({ maxLength: 63 })),
      },
      { description: 'A Secret whose key "template" renders each VM\'s networkData (see the docs).' },
    ),
  ),
  rootDeviceName: Type.Optional(Type.String({ maxLength: 253, default: '/dev/vda' })),
  bootInterfaceName: Type.Optional(
    Type.String({ description: 'The NIC it boots from; default the first one.', maxLength: 15 }),
  ),
});

export const VirtualHostPoolSpec = Type.Object(
  {
    nodeSelector: NodeSelector,
    networks: Type.Array(Network, {
      minItems: 1,
      maxItems: 8,
      'x-kubernetes-list-type': 'map',
      'x-kubernetes-list-map-keys': ['name'],
    }),
    nodes: Type.Array(Flavor, {
      description: 'The flavors: which VMs each hypervisor node gets.',
      maxItems: 16,
      'x-kubernetes-list-type': 'map',
      'x-kubernetes-list-map-keys': ['name'],
    }),
    bmcCredentials: Type.Object(
      {
        username: Type.String({ minLength: 1, maxLength: 253 }),
        password: Type.String({ minLength: 1, maxLength: 253 }),
      },
      { description: "Every VM's BMC login (written to each host's credentials Secret)." },
    ),
    nodeLabelKeysToCopy: Type.Optional(
      Type.Array(Type.String({ maxLength: 317 }), {
        description: "The hypervisor node's labels each of its BareMetalHosts carries.",
        maxItems: 32,
      }),
    ),
    daemonSet: Type.Optional(
      Type.Object(
        { image: Type.Optional(Type.String({ maxLength: 1024 })) },
        { description: 'The hypervisor agent DaemonSet.' },
      ),
    ),
  },
  {
    ...cel({
      rule: 'self.nodes.all(f, f.networkInterfaces.all(i, self.networks.exists(n, n.name == i.network)))',
      message: 'every networkInterfaces[].network must name one of spec.networks',
    }),
  },
);

const AddressOf = Type.Object({
  network: Type.String({ maxLength: 63 }),
  interface: Type.Optional(Type.String({ maxLength: 15 })),
  ip: Type.String(ADDRESS),
  mac: Type.Optional(Type.String({ maxLength: 17 })),
});

export const VirtualMachineStatus = Type.Object({
  name: Type.String({ maxLength: 253 }),
  flavor: Type.String({ maxLength: 63 }),
  addresses: Type.Optional(Type.Array(AddressOf, { maxItems: 8 })),
  bootMAC: Type.Optional(Type.String({ maxLength: 17 })),
  bmcAddress: Type.Optional(Type.String({ maxLength: 2048 })),
  hostReady: Type.Boolean({ description: 'Its BareMetalHost is available (or provisioned).' }),
});

export const HypervisorStatus = Type.Object({
  node: Type.String({ maxLength: 253 }),
  bridgeAddresses: Type.Optional(Type.Array(AddressOf, { maxItems: 8 })),
  dhcpRanges: Type.Optional(
    Type.Array(
      Type.Object({
        network: Type.String({ maxLength: 63 }),
        start: Type.String(ADDRESS),
        stop: Type.String(ADDRESS),
      }),
      { maxItems: 8 },
    ),
  ),
  agentReady: Type.Optional(Type.Boolean()),
  vms: Type.Optional(Type.Array(VirtualMachineStatus, { maxItems: 1024 })),
});

export const VirtualHostPoolStatus = Type.Object({
  observedGeneration: Type.Optional(Type.Integer({ minimum: 0, format: 'int64' })),
  conditions: Type.Optional(Conditions),
  desiredHosts: Type.Optional(Type.Integer({ minimum: 0 })),
  createdHosts: Type.Optional(Type.Integer({ minimum: 0 })),
  readyHosts: Type.Optional(Type.Integer({ minimum: 0 })),
  hypervisors: Type.Optional(
    Type.Array(HypervisorStatus, {
      'x-kubernetes-list-type': 'map',
      'x-kubernetes-list-map-keys': ['node'],
    }),
  ),
});

export const VirtualHostPools = defineCustomResource({
  ...VirtualHostPoolKind,
  singular: 'virtualhostpool',
  shortNames: ['vhp'],
  categories: ['nodewarden'],
  description:
    'VMs on hypervisor nodes, each made a BareMetalHost (ViNO parity): networks, flavors, BMC credentials.',
  spec: VirtualHostPoolSpec,
  status: VirtualHostPoolStatus,
  validations: [
    {
      rule: 'size(self.metadata.name) <= 63',
      message: 'name must be at most 63 characters: it is a label value on every host of the pool',
    },
  ],
  printerColumns: [
    { name: 'Ready', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].status' },
    { name: 'Hosts', type: 'integer', jsonPath: '.status.readyHosts', description: 'Hosts available' },
    { name: 'Desired', type: 'integer', jsonPath: '.status.desiredHosts' },
    { name: 'Created', type: 'integer', jsonPath: '.status.createdHosts', priority: 1 },
    {
      name: 'Reason',
      type: 'string',
      jsonPath: '.status.conditions[?(@.type=="Ready")].reason',
      priority: 1,
    },
  ],
});

export type VirtualHostPool = ResourceOf<typeof VirtualHostPools>;
export type VirtualHostPoolSpecType = VirtualHostPool['spec'];
export type VirtualHostPoolStatusType = NonNullable<VirtualHostPool['status']>;
export type NetworkSpec = VirtualHostPoolSpecType['networks'][number];
export type FlavorSpec = VirtualHostPoolSpecType['nodes'][number];

// -------------------------------------------------------------------- IPPool

const AddressRange = Type.Object(
  { start: Address('First address (inclusive).'), stop: Address('Last address (inclusive).') },
  { description: 'A range of addresses; start must not come after stop (the webhook checks).' },
);

export const IPAllocation = Type.Object({
  owner: Type.String({ description: 'Who holds it, e.g. vm/<host>/<nic> or bridge/<node>.', maxLength: 512 }),
  ip: Type.String(ADDRESS),
  mac: Type.Optional(Type.String({ pattern: MAC_PATTERN })),
});

export const RangeAllocation = Type.Object({
  owner: Type.String({ maxLength: 512 }),
  start: Type.String(ADDRESS),
  stop: Type.String(ADDRESS),
});

export const IPPoolSpec = Type.Object(
  {
    subnet: Type.String({
      description: 'The network. Immutable.',
      ...ADDRESS,
      ...cel(
        { rule: 'isCIDR(self)', message: 'must be a CIDR such as 192.168.2.0/24 or fd00:10::/64' },
        immutable('subnet is immutable: make another IPPool'),
      ),
    }),
    macPrefix: Type.String({
      description: 'MACs count up from here. Immutable.',
      pattern: MAC_PATTERN,
      ...cel(immutable('macPrefix is immutable: addresses were handed out under it')),
    }),
    ranges: Type.Array(AddressRange, {
      description: 'The ranges single addresses are handed out from, first free first.',
      maxItems: 16,
    }),
    dhcpRange: Type.Optional(AddressRange),
    dhcpBlockBits: Type.Optional(
      Type.Integer({
        description: 'Each DHCP sub-range holds 2^dhcpBlockBits addresses.',
        minimum: 1,
        maximum: 16,
        default: 4,
      }),
    ),
    nextMAC: Type.Optional(
      Type.String({ description: 'The MAC the next allocation gets.', pattern: MAC_PATTERN }),
    ),
    allocations: Type.Optional(
      Type.Array(IPAllocation, {
        maxItems: 4096,
        'x-kubernetes-list-type': 'map',
        'x-kubernetes-list-map-keys': ['owner'],
      }),
    ),
    dhcpAllocations: Type.Optional(
      Type.Array(RangeAllocation, {
        maxItems: 1024,
        'x-kubernetes-list-type': 'map',
        'x-kubernetes-list-map-keys': ['owner'],
      }),
    ),
  },
  {
    'x-kubernetes-validations': [
      {
        rule: '!isCIDR(self.subnet) || self.ranges.all(r, !isIP(r.start) || !isIP(r.stop) || (cidr(self.subnet).containsIP(r.start) && cidr(self.subnet).containsIP(r.stop)))',
        message: 'every range must lie inside subnet',
        fieldPath: '.ranges',
      },
      {
        rule: '!has(self.dhcpRange) || !isCIDR(self.subnet) || !isIP(self.dhcpRange.start) || !isIP(self.dhcpRange.stop) || (cidr(self.subnet).containsIP(self.dhcpRange.start) && cidr(self.subnet).containsIP(self.dhcpRange.stop))',
        message: 'dhcpRange must lie inside subnet',
        fieldPath: '.dhcpRange',
      },
    ],
  },
);

export const IPPools = defineCustomResource({
  ...IPPoolKind,
  singular: 'ippool',
  categories: ['nodewarden'],
  description: 'The addresses of one network: ranges, MAC prefix, and who holds which address.',
  spec: IPPoolSpec,
  printerColumns: [
    { name: 'Subnet', type: 'string', jsonPath: '.spec.subnet' },
    { name: 'MAC prefix', type: 'string', jsonPath: '.spec.macPrefix' },
    { name: 'Next MAC', type: 'string', jsonPath: '.spec.nextMAC', priority: 1 },
  ],
});

export type IPPool = ResourceOf<typeof IPPools>;
export type IPPoolSpecType = IPPool['spec'];
export type IPAllocationType = NonNullable<IPPoolSpecType['allocations']>[number];
export type RangeAllocationType = NonNullable<IPPoolSpecType['dhcpAllocations']>[number];
