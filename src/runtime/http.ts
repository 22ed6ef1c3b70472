// What our HTTP servers (the admission webhook, the simulated cloud) share: an
// error that carries its status code, and a JSON body read with a size bound.
import type { IncomingMessage } from 'node:http';

/** Thrown by a request handler; the server answers with `status` and the message. */
export class HttpError extends Error {
  readonly status: number;

  constructor(status: number, message: string) {
    super(message);
    this.name = 'HttpError';
    this.status = status;
  }
}

/** The request body parsed as JSON; undefined when empty. 413 past `maxBytes`, 400 if not JSON. */
export async function readJsonBody(req: IncomingMessage, maxBytes: number): Promise<unknown> {
  const tooLarge = () => new HttpError(413, `body larger than ${maxBytes} bytes`);
  if (Number(req.headers['content-length'] ?? 0) > maxBytes) throw tooLarge();
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > maxBytes) throw tooLarge();
    chunks.push(chunk as Buffer);
  }
  if (size === 0) return undefined;
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    throw new HttpError(400, 'body is not JSON');
  }
}
