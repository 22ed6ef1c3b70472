// The guest's side of /healthz: the container connects to the virtio-serial
// port's socket as soon as QEMU made it, and the guest is up once it wrote
// GUEST_READY_LINE there; and the health endpoint that says so on the pod's loopback.
import { createServer, type Server } from 'node:http';
import { connect } from 'node:net';
import { GUEST_READY_LINE, VM_HEALTH_PATH } from '../../api/vm-image.ts';

export class GuestState {
  ready = false;
  running = true;
  readyAt?: number;
}

/** Follows the guest's port until it says it is up; retries while QEMU has not made the socket yet. */
export function watchGuest(socketPath: string, state: GuestState, log: (line: string) => void): void {
  const attempt = () => {
    if (!state.running) return;
    const sock = connect(socketPath);
    let buf = '';
    sock.on('connect', () => log(`guest: listening on ${socketPath}`));
    sock.on('data', (chunk) => {
      buf += chunk.toString();
      const lines = buf.split('\n');
      buf = lines.pop() ?? '';
      if (!state.ready && lines.some((l) => l.trim() === GUEST_READY_LINE)) {
        state.ready = true;
        state.readyAt = Date.now();
        log('guest: ready');
      }
    });
    sock.on('error', () => setTimeout(attempt, 250));
  };
  attempt();
}

/** GET /healthz: 200 once the guest is up and QEMU runs, 503 before and after. */
export function serveHealth(port: number, state: GuestState): Server {
  const server = createServer((req, res) => {
    if (req.url !== VM_HEALTH_PATH) {
      res.writeHead(404).end();
      return;
    }
    const up = state.ready && state.running;
    res.writeHead(up ? 200 : 503, { 'content-type': 'text/plain' }).end(up ? 'ok\n' : 'guest not up\n');
  });
  server.listen(port, '127.0.0.1');
  return server;
}
