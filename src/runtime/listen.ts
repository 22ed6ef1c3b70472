// One way to turn a controller-runtime style bind address (":8080",
// "127.0.0.1:0", "[::1]:9443") into a listening server, for every server the
// operator runs (probes, metrics, webhooks).
import type { AddressInfo, Server } from 'node:net';

export function parseBindAddress(address: string): { host: string | undefined; port: number } {
  const i = address.lastIndexOf(':');
  const port = Number(address.slice(i + 1));
  if (i < 0 || !Number.isInteger(port) || port < 0 || port > 65535) {
    throw new Error(`invalid bind address "${address}" (want host:port or :port)`);
  }
  return { host: address.slice(0, i).replace(/^\[(.*)\]$/, '$1') || undefined, port };
}

/** Listens on `address`; a taken port or bad address becomes an error naming `what`. */
export async function listen(server: Server, address: string, what: string): Promise<AddressInfo> {
  const { host, port } = parseBindAddress(address);
  await new Promise<void>((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException) =>
      reject(
        new Error(
          `cannot serve ${what} on ${address}: ${err.code === 'EADDRINUSE' ? 'address in use' : err.message}`,
        ),
      );
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      resolve();
    });
  });
  return server.address() as AddressInfo;
}
