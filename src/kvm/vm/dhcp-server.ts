// The DHCP server on the pod's bridge: answers the guest's MAC with the pod's
// address (dhcp.ts decides), broadcast back on the bridge.
import { createSocket, type Socket } from 'node:dgram';
import { dhcpReply, type Lease } from './dhcp.ts';

export function serveDhcp(lease: Lease, serverId: string, log: (line: string) => void): Socket {
  const socket = createSocket({ type: 'udp4', reuseAddr: true });
  socket.on('message', (msg) => {
    const reply = dhcpReply(msg, lease, serverId);
    if (!reply) return;
    socket.send(reply, 68, '255.255.255.255', (err) => {
      if (err) log(`dhcp: reply not sent: ${err.message}`);
    });
  });
  socket.on('error', (err) => log(`dhcp: ${err.message}`));
  socket.bind(67, '0.0.0.0', () => {
    socket.setBroadcast(true);
    log(`dhcp: ${lease.ip}/${lease.prefix} via ${lease.router ?? 'no router'} for ${lease.mac}`);
  });
  return socket;
}
