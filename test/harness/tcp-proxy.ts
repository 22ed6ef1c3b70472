// A loopback TCP proxy that a test can cut and restore, to put a network
// partition between a client and the API server (TLS passes through intact).
import { createConnection, createServer, type Server, type Socket } from 'node:net';

export class TcpProxy {
  private readonly server: Server;
  private readonly sockets = new Set<Socket>();
  private refusing = false;
  port = 0;

  constructor(target: { host: string; port: number }) {
    this.server = createServer((client) => {
      if (this.refusing) {
        client.destroy();
        return;
      }
      const upstream = createConnection(target);
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on('close', () => this.sockets.delete(s));
        s.on('error', () => {
          client.destroy();
          upstream.destroy();
        });
      }
      client.pipe(upstream);
      upstream.pipe(client);
    });
  }

  async start(): Promise<this> {
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    this.port = (this.server.address() as { port: number }).port;
    return this;
  }

  /** Drops every connection and refuses new ones until restore(). */
  cut(): void {
    this.refusing = true;
    for (const s of this.sockets) s.destroy();
  }

  restore(): void {
    this.refusing = false;
  }

  async close(): Promise<void> {
    this.cut();
    await new Promise((r) => this.server.close(r));
  }
}
