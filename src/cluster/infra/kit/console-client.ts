// A JSON call to a simulator's console from outside it (its command, its
// add-on, tests): {"error"} bodies become Errors naming the simulator and the
// call. The calls carry the console's header, so the API faults injected into
// a simulator are the operator's to meet, never its own console's.
import { CONSOLE_HEADER } from './routes.ts';

export async function consoleCall<T = unknown>(
  title: string,
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
    throw new Error(`${title}: ${method} ${path}: ${res.status} ${typeof error === 'string' ? error : text}`);
  }
  return parsed as T;
}
