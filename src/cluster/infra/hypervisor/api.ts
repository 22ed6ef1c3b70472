// A JSON call to the hypervisor's console, for the add-on, the CLI and the
// operator's tests: its {"error"} bodies become Errors naming the call.
import { consoleCall } from '../kit/console-client.ts';

export function hypervisorRequest<T = unknown>(
  endpoint: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<T> {
  return consoleCall<T>('simulated hypervisor', endpoint, method, path, body);
}
