// The management network the VirtualHostPool tests give their pools:
// 192.168.0.0/20, single addresses from .2.10–.2.40 and DHCP blocks of 16
// from .4.0–.7.255, as a ViNO lab's "oam" network.
export const oamNetwork = (over: Record<string, unknown> = {}) => ({
  name: 'oam',
  subnet: '192.168.0.0/20',
  staticAllocationStart: '192.168.2.10',
  staticAllocationStop: '192.168.2.40',
  dhcpAllocationStart: '192.168.4.0',
  dhcpAllocationStop: '192.168.7.255',
  instanceSubnetBitStep: 4,
  ...over,
});
