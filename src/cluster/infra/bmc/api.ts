// A call to the fleet's JSON console over HTTPS, for the add-on and the CLI:
// the fleet's own certificate is trusted when known (it is its own CA), and
// the console's {"error"} bodies become Errors naming the call.
import https from 'node:https';

export interface ConsoleTarget {
  endpoint: string;
  /** The fleet's certificate (PEM); without it the certificate is not checked (loopback only). */
  ca?: string;
}

export class ConsoleError extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.name = 'ConsoleError';
    this.status = status;
  }
}

export function consoleRequest<T = unknown>(
  target: ConsoleTarget,
  method: string,
  path: string,
  body?: unknown,
): Promise<T> {
  const url = new URL(path, target.endpoint);
  const payload = body === undefined ? undefined : JSON.stringify(body);
  return new Promise<T>((resolve, reject) => {
    const req = https.request(
      url,
      {
        method,
        ...(target.ca ? { ca: target.ca } : { rejectUnauthorized: false }),
        headers: payload
          ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) }
          : {},
        timeout: 10_000,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let parsed: unknown;
          try {
            parsed = text ? JSON.parse(text) : undefined;
          } catch {
            parsed = text;
          }
          const status = res.statusCode ?? 0;
          if (status >= 200 && status < 300) return resolve(parsed as T);
          const error = (parsed as { error?: unknown } | undefined)?.error;
          reject(
            new ConsoleError(
              status,
              `simulated BMC fleet: ${method} ${path}: ${status} ${typeof error === 'string' ? error : text}`,
            ),
          );
        });
      },
    );
    req.on('timeout', () =>
      req.destroy(new Error(`simulated BMC fleet: ${method} ${path}: no answer in 10s`)),
    );
    req.on('error', reject);
    req.end(payload);
  });
}
