// What a test file needs to talk to the run's cluster: its kubeconfig and a
// namespace of the suite's own, removed at the end.
import { after, before } from 'node:test';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';

export function testKubeconfigPath(): string {
  const path = process.env.NODEWARDEN_TEST_KUBECONFIG;
  if (!path)
    throw new Error(
      'NODEWARDEN_TEST_KUBECONFIG is not set: run integration tests through make test-integration',
    );
  return path;
}

export function testKubeConfig(): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromFile(testKubeconfigPath());
  return kc;
}

/** Creates a fresh namespace before the suite and deletes it after; returns a getter. */
export function useNamespace(prefix: string): () => string {
  let name = '';
  const core = () => testKubeConfig().makeApiClient(CoreV1Api);
  before(async () => {
    name = `${prefix}-${Date.now().toString(36)}`;
    await core().createNamespace({ body: { metadata: { name } } });
  });
  after(async () => {
    await core()
      .deleteNamespace({ name })
      .catch(() => {});
  });
  return () => name;
}

/** Polls until check returns a value (not undefined), or fails with the last reason. */
export async function eventually<T>(
  what: string,
  check: () => Promise<T | undefined>,
  timeoutMs = 30_000,
  intervalMs = 200,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const v = await check();
      if (v !== undefined) return v;
    } catch (err) {
      last = err;
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${String(last)}` : ''}`);
}
