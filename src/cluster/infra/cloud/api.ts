// A plain JSON call to the simulated cloud's API, for the CLI and the add-on
// (the operator goes through SimulatedCloudProvider, which maps errors to
// CloudError as a real cloud's client would). Its calls carry the console's
// header: the API faults injected are the operator's to meet, not ours.
import { CONSOLE_HEADER } from '../kit/routes.ts';

export async function cloudRequest<T = unknown>(
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
      `simulated cloud: ${method} ${path}: ${res.status} ${typeof error === 'string' ? error : text}`,
    );
  }
  return parsed as T;
}
