// A plain JSON call to the simulated cloud's API, for the CLI and the add-on
// (the operator goes through SimulatedCloudProvider, which maps errors to
// CloudError as a real cloud's client would). Its calls carry the console's
// header: the API faults injected are the operator's to meet, not ours.
import { consoleCall } from '../kit/console-client.ts';

export function cloudRequest<T = unknown>(
  endpoint: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<T> {
  return consoleCall<T>('simulated cloud', endpoint, method, path, body);
}
