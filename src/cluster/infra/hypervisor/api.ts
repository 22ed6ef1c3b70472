// A JSON call to the hypervisor's console, for the add-on, the CLI and the
// operator's tests: its {"error"} bodies become Errors naming the call.
import { CONSOLE_HEADER } from '../kit/routes.ts';

export async function hypervisorRequest<T = unknown>(
  endpoint: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<T> {
  const res = await fetch(endpoint.replace(/\/+$/, '') + path, {
    method,
    headers: {
      [CONSOLE_HEADER]: '1',
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(5000),
  });
  const text = await res.text();
  const parsed = text ? (JSON.parse(text) as unknown) : undefined;
  if (!res.ok) {
    const error = (parsed as { error?: unknown } | undefined)?.error;
    throw new Error(
      `simulated hypervisor: ${method} ${path}: ${res.status} ${typeof error === 'string' ? error : text}`,
    );
  }
  return parsed as T;
}
