// A TenantCluster's support services as the tests on real nodes wait for and
// read them: rolled out (every Deployment's spec observed, one pod of it
// available, no other pod left), so what a test asserts or connects to is not
// a pod about to be replaced.
import { eventually } from './cluster.ts';

// biome-ignore lint/suspicious/noExplicitAny: objects read field by field as kubectl prints them
type Any = any;
/** `kubectl get … -o json` in the test's cluster. */
export type GetJson = (...args: string[]) => Promise<Any>;

const MANAGED = 'app.kubernetes.io/managed-by=nodewarden';
const COMPONENT = 'app.kubernetes.io/component';

/** Why the services are not rolled out yet, or undefined once they are. */
async function notRolledOut(json: GetJson): Promise<string | undefined> {
  const deployments = (await json('get', 'deployments', '-l', MANAGED)).items as Any[];
  const pods = (await json('get', 'pods', '-l', MANAGED)).items as Any[];
  if (deployments.length === 0) return 'no Deployment';
  for (const d of deployments) {
    const name = d.metadata.name;
    const s = d.status ?? {};
    if (s.observedGeneration !== d.metadata.generation) return `${name}: spec not observed yet`;
    if (s.updatedReplicas !== 1 || s.availableReplicas !== 1 || s.replicas !== 1)
      return `${name}: ${s.updatedReplicas ?? 0} updated, ${s.availableReplicas ?? 0} available of ${s.replicas ?? 0}`;
    const component = d.metadata.labels?.[COMPONENT];
    const mine = pods.filter((p) => p.metadata.labels?.[COMPONENT] === component);
    if (mine.length !== 1)
      return `${name}: ${mine.length} pods (${mine.map((p) => p.metadata.name).join(', ')})`;
  }
  return undefined;
}

/** Waits until every support service has rolled out; the error says which one had not. */
export async function servicesRolledOut(json: GetJson, ms = 120_000): Promise<void> {
  let last: string | undefined;
  await eventually(
    'the support services rolled out, one pod each',
    async () => {
      last = await notRolledOut(json);
      return last === undefined ? true : undefined;
    },
    ms,
    1000,
  ).catch((err: Error) => {
    throw new Error(`${err.message}: ${last}`);
  });
}

/** The Ready, not terminating pods of the support services. */
export async function readyServicePods(json: GetJson): Promise<Any[]> {
  const pods = (await json('get', 'pods', '-l', MANAGED)).items as Any[];
  return pods.filter(
    (p) =>
      !p.metadata.deletionTimestamp &&
      p.status.conditions?.some((c: Any) => c.type === 'Ready' && c.status === 'True'),
  );
}
