// QEMU's machine protocol over its unix socket: just enough to power the
// guest off (system_powerdown, the ACPI button) and to stop QEMU (quit).
import { connect } from 'node:net';

/** Runs one QMP command after the capabilities handshake; resolves with its answer. */
export function qmpCommand(socketPath: string, execute: string, timeoutMs = 5_000): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const sock = connect(socketPath);
    let buf = '';
    let stage: 'greeting' | 'capabilities' | 'command' = 'greeting';
    const timer = setTimeout(() => {
      sock.destroy();
      reject(new Error(`QMP ${execute}: no answer in ${timeoutMs} ms`));
    }, timeoutMs);
    const done = (err?: Error, value?: unknown) => {
      clearTimeout(timer);
      sock.end();
      if (err) reject(err);
      else resolve(value);
    };
    sock.on('error', (e) => done(e));
    sock.on('data', (chunk) => {
      buf += chunk.toString();
      for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
        const msg = JSON.parse(buf.slice(0, nl)) as {
          QMP?: unknown;
          return?: unknown;
          error?: { desc: string };
        };
        buf = buf.slice(nl + 1);
        if (msg.error) return done(new Error(`QMP ${execute}: ${msg.error.desc}`));
        if (stage === 'greeting' && msg.QMP) {
          stage = 'capabilities';
          sock.write(`${JSON.stringify({ execute: 'qmp_capabilities' })}\n`);
        } else if (stage === 'capabilities' && 'return' in msg) {
          stage = 'command';
          sock.write(`${JSON.stringify({ execute })}\n`);
        } else if (stage === 'command' && 'return' in msg) {
          return done(undefined, msg.return);
        }
      }
    });
  });
}
