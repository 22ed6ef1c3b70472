// Bad input at the VirtualHostPool and IPPool doors, against the real API
// server and the CRDs' own schemas: wrong types, out-of-range and unknown
// values, oversized strings and lists, and cross-field conflicts (CEL:
// addresses outside their subnet, interfaces naming no network, a selector
// selecting every node). Each is refused with a message naming the field,
// and nothing is created.
import { IPPools, VirtualHostPools } from '../../src/api/virtualhosts.ts';
import { type BadInput, refusesBadInput } from '../harness/bad-input.ts';

type Spec = Record<string, unknown>;
type Net = Record<string, unknown>;
const TOO_LONG = 'Too long: may not be (more than|longer than)';
const TOO_MANY = 'Too many: \\d+: must have at most';

const network = (o: Net) => (s: Spec) => ({
  ...s,
  networks: [{ ...(s.networks as Net[])[0], ...o }],
});
const flavor = (o: Net) => (s: Spec) => ({ ...s, nodes: [{ ...(s.nodes as Net[])[0], ...o }] });

const goodPool: Spec = {
  nodeSelector: { matchLabels: { 'baremetal.nodewarden.dev/hypervisor': 'true' } },
  networks: [
    {
      name: 'oam',
      subnet: '192.168.0.0/20',
      type: 'ipv4',
      staticAllocationStart: '192.168.2.10',
      staticAllocationStop: '192.168.2.200',
      dhcpAllocationStart: '192.168.4.0',
      dhcpAllocationStop: '192.168.7.255',
    },
  ],
  nodes: [{ name: 'worker', count: 2, networkInterfaces: [{ name: 'enp1s0', network: 'oam' }] }],
  bmcCredentials: { username: 'admin', password: 'change-me' },
};

const poolCases: BadInput[] = [
  ['no nodeSelector', { nodeSelector: undefined }, /spec\.nodeSelector: Required value/],
  [
    'a nodeSelector selecting every node (CEL)',
    { nodeSelector: {} },
    /spec\.nodeSelector: Invalid value: .*nodeSelector selects every node/,
  ],
  [
    'an unknown selector operator',
    { nodeSelector: { matchExpressions: [{ key: 'k', operator: 'Near' }] } },
    /spec\.nodeSelector\.matchExpressions\[0\]\.operator: Unsupported value: "Near": supported values: "In", "NotIn", "Exists", "DoesNotExist"/,
  ],
  [
    'In without values (CEL)',
    { nodeSelector: { matchExpressions: [{ key: 'k', operator: 'In' }] } },
    /spec\.nodeSelector\.matchExpressions\[0\]: Invalid value: .*In and NotIn need values/,
  ],
  [
    'no networks',
    { networks: [] },
    /spec\.networks: Invalid value: 0: spec\.networks in body should have at least 1 items/,
  ],
  [
    'a subnet that is no CIDR (CEL)',
    network({ subnet: '192.168.0.0' }),
    /spec\.networks\[0\]\.subnet: Invalid value: .*must be a CIDR/,
  ],
  [
    'an unknown network type',
    network({ type: 'ipv5' }),
    /spec\.networks\[0\]\.type: Unsupported value: "ipv5": supported values: "ipv4", "ipv6"/,
  ],
  [
    'a subnet of the other family (CEL)',
    network({ type: 'ipv6' }),
    /spec\.networks\[0\]: Invalid value: .*subnet's family does not match type/,
  ],
  [
    'a static range starting outside the subnet (CEL)',
    network({ staticAllocationStart: '10.0.0.1' }),
    /spec\.networks\[0\]\.staticAllocationStart: Invalid value: .*staticAllocationStart must be an address inside subnet/,
  ],
  [
    'an address that is no IP (CEL)',
    network({ staticAllocationStop: '192.168.2.x' }),
    /spec\.networks\[0\]\.staticAllocationStop: Invalid value: .*must be an IP address/,
  ],
  [
    'a DHCP start without its stop (CEL)',
    network({ dhcpAllocationStop: undefined }),
    /spec\.networks\[0\]: Invalid value: .*give both dhcpAllocationStart and dhcpAllocationStop, or neither/,
  ],
  [
    'an instanceSubnetBitStep above 16',
    network({ instanceSubnetBitStep: 17 }),
    /spec\.networks\[0\]\.instanceSubnetBitStep: Invalid value: 17: spec\.networks\[0\]\.instanceSubnetBitStep in body should be less than or equal to 16/,
  ],
  [
    'a macPrefix that is no MAC',
    network({ macPrefix: '02-00-00-00-00-00' }),
    /spec\.networks\[0\]\.macPrefix: Invalid value: "02-00-00-00-00-00": spec\.networks\[0\]\.macPrefix in body should match/,
  ],
  [
    'an oversized bridgeName',
    network({ bridgeName: 'b'.repeat(16) }),
    new RegExp(`spec\\.networks\\[0\\]\\.bridgeName: ${TOO_LONG} 15`),
  ],
  [
    'more than 8 dnsServers',
    network({ dnsServers: Array.from({ length: 9 }, (_, i) => `192.168.0.${i + 1}`) }),
    new RegExp(`spec\\.networks\\[0\\]\\.dnsServers: ${TOO_MANY} 8 items`),
  ],
  [
    'more than 16 flavors',
    (s) => ({
      ...s,
      nodes: Array.from({ length: 17 }, (_, i) => ({ ...(s.nodes as Net[])[0], name: `f${i}` })),
    }),
    new RegExp(`spec\\.nodes: ${TOO_MANY} 16 items`),
  ],
  [
    'a count above 64',
    flavor({ count: 65 }),
    /spec\.nodes\[0\]\.count: Invalid value: 65: spec\.nodes\[0\]\.count in body should be less than or equal to 64/,
  ],
  [
    'a count given as a string',
    flavor({ count: '2' }),
    /spec\.nodes\[0\]\.count: Invalid value: "string": spec\.nodes\[0\]\.count in body must be of type integer/,
  ],
  [
    'no cpus',
    flavor({ cpus: 0 }),
    /spec\.nodes\[0\]\.cpus: Invalid value: 0: spec\.nodes\[0\]\.cpus in body should be greater than or equal to 1/,
  ],
  [
    'too little memory',
    flavor({ memoryMiB: 63 }),
    /spec\.nodes\[0\]\.memoryMiB: Invalid value: 63: spec\.nodes\[0\]\.memoryMiB in body should be greater than or equal to 64/,
  ],
  [
    'a flavor without interfaces',
    flavor({ networkInterfaces: [] }),
    /spec\.nodes\[0\]\.networkInterfaces: Invalid value: 0: spec\.nodes\[0\]\.networkInterfaces in body should have at least 1 items/,
  ],
  [
    'an MTU below 576',
    flavor({ networkInterfaces: [{ name: 'enp1s0', network: 'oam', mtu: 100 }] }),
    /spec\.nodes\[0\]\.networkInterfaces\[0\]\.mtu: Invalid value: 100: spec\.nodes\[0\]\.networkInterfaces\[0\]\.mtu in body should be greater than or equal to 576/,
  ],
  [
    'an interface on a network the pool does not have (CEL)',
    flavor({ networkInterfaces: [{ name: 'enp1s0', network: 'storage' }] }),
    /spec: Invalid value: .*every networkInterfaces\[\]\.network must name one of spec\.networks/,
  ],
  [
    'BMC credentials without password',
    { bmcCredentials: { username: 'admin' } },
    /spec\.bmcCredentials\.password: Required value/,
  ],
  [
    'an oversized BMC username',
    { bmcCredentials: { username: 'u'.repeat(254), password: 'p' } },
    new RegExp(`spec\\.bmcCredentials\\.username: ${TOO_LONG} 253`),
  ],
  [
    'more than 32 label keys to copy',
    { nodeLabelKeysToCopy: Array.from({ length: 33 }, (_, i) => `k${i}`) },
    new RegExp(`spec\\.nodeLabelKeysToCopy: ${TOO_MANY} 32 items`),
  ],
];

refusesBadInput(VirtualHostPools, goodPool, poolCases);

const goodIpPool: Spec = {
  subnet: '192.168.0.0/20',
  macPrefix: '02:00:00:00:00:00',
  ranges: [{ start: '192.168.2.10', stop: '192.168.2.200' }],
  dhcpRange: { start: '192.168.4.0', stop: '192.168.7.255' },
  dhcpBlockBits: 4,
};

refusesBadInput(IPPools, goodIpPool, [
  ['no subnet', { subnet: undefined }, /spec\.subnet: Required value/],
  ['a subnet that is no CIDR (CEL)', { subnet: 'lab' }, /spec\.subnet: Invalid value: .*must be a CIDR/],
  [
    'an oversized subnet',
    { subnet: `192.168.0.0/20${' '.repeat(60)}` },
    new RegExp(`spec\\.subnet: ${TOO_LONG} 64`),
  ],
  ['no macPrefix', { macPrefix: undefined }, /spec\.macPrefix: Required value/],
  [
    'an upper-case macPrefix',
    { macPrefix: '02:AA:00:00:00:00' },
    /spec\.macPrefix: Invalid value: "02:AA:00:00:00:00": spec\.macPrefix in body should match/,
  ],
  [
    'a range outside the subnet (CEL)',
    { ranges: [{ start: '10.0.0.1', stop: '10.0.0.9' }] },
    /spec\.ranges: Invalid value: .*every range must lie inside subnet/,
  ],
  [
    'a dhcpRange outside the subnet (CEL)',
    { dhcpRange: { start: '10.0.0.1', stop: '10.0.0.9' } },
    /spec\.dhcpRange: Invalid value: .*dhcpRange must lie inside subnet/,
  ],
  [
    'a range end that is no IP (CEL)',
    { ranges: [{ start: '192.168.2.10', stop: 'last' }] },
    /spec\.ranges\[0\]\.stop: Invalid value: .*must be an IP address/,
  ],
  [
    'more than 16 ranges',
    { ranges: Array.from({ length: 17 }, (_, i) => ({ start: `192.168.2.${i}`, stop: `192.168.2.${i}` })) },
    new RegExp(`spec\\.ranges: ${TOO_MANY} 16 items`),
  ],
  [
    'a dhcpBlockBits of 0',
    { dhcpBlockBits: 0 },
    /spec\.dhcpBlockBits: Invalid value: 0: spec\.dhcpBlockBits in body should be greater than or equal to 1/,
  ],
  [
    'ranges that are no list',
    { ranges: { start: '192.168.2.10', stop: '192.168.2.20' } },
    /spec\.ranges: Invalid value: "object": spec\.ranges in body must be of type array/,
  ],
  [
    'an allocation with a MAC that is no MAC',
    { allocations: [{ owner: 'vm-1', ip: '192.168.2.10', mac: 'zz' }] },
    /spec\.allocations\[0\]\.mac: Invalid value: "zz": spec\.allocations\[0\]\.mac in body should match/,
  ],
]);
