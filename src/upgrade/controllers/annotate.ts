// Annotates nodes with their scaling group and boot image, asking the cloud
// once per node (the anchor's annotateNodes). The answers never change for an
// instance, so they live on the Node, where a restarted operator finds them.
import type { KubeClient } from '../../runtime/client.ts';
import { isNotFound } from '../../runtime/errors.ts';
import { mapConcurrently } from '../../runtime/pool.ts';
import type { ReconcileContext } from '../../runtime/reconcile.ts';
import { Nodes } from '../../runtime/resources.ts';
import { Upgrade } from '../names.ts';
import { CloudError, type CloudProvider } from '../providers/interface.ts';
import type { RolloutProblem } from '../rollout/causes.ts';
import type { NodeObject } from '../rollout/observe.ts';

const A = Upgrade.annotations;
/** Cloud calls at once while annotating a fresh fleet. */
const CONCURRENCY = 16;
/** A node the cloud does not know is asked about again only after this long. */
const NOT_OURS_RETRY_MS = 10 * 60_000;

type Node = NodeObject;

export interface AnnotateResult {
  /** The nodes, with the annotations written this round already applied. */
  nodes: Node[];
  /** Transient errors of this round; lasting ones are in `refusals`. */
  problems: RolloutProblem[];
  /** Nodes the cloud does not know (lasting errors): invalid, like the anchor's. */
  refused: Set<string>;
  /** Why each of them was refused, for every NodeVersion that lists them invalid. */
  refusals: Refusal[];
}

/** A node the cloud refused with a lasting error (a control-plane Machine through Cluster API, say). */
export interface Refusal {
  node: string;
  /** The node and when it was refused: asked again later, a refusal is news again. */
  key: string;
  message: string;
}

/**
 * The refusals a NodeVersion has not said yet, as problems (its status.lastError and
 * Degraded), and what it has said after. Each NodeVersion lists a refused node invalid, so
 * each says why; told once per refusal (the cloud is asked once), not every round. Before,
 * only the NodeVersion whose round happened to ask the cloud said it.
 */
export function untoldRefusals(
  refusals: readonly Refusal[],
  told: ReadonlySet<string>,
): { problems: RolloutProblem[]; told: Set<string> } {
  const problems = refusals
    .filter((r) => !told.has(r.key))
    .map((r): RolloutProblem => ({ cause: 'cloudError', message: r.message }));
  return { problems, told: new Set(refusals.map((r) => r.key)) };
}

export class NodeAnnotator {
  private readonly client: KubeClient;
  private readonly cloud: CloudProvider;
  /** Nodes (by uid) the cloud answered with a lasting error: when, and what it said. */
  private readonly refused = new Map<string, { at: number; message: string }>();

  constructor(client: KubeClient, cloud: CloudProvider) {
    this.client = client;
    this.cloud = cloud;
  }

  async annotate(nodes: Node[], log: ReconcileContext['log']): Promise<AnnotateResult> {
    const now = Date.now();
    const todo = nodes.filter((n) => {
      const ann = n.metadata.annotations ?? {};
      if (!n.spec?.providerID || (ann[A.scalingGroup] && ann[A.image])) return false;
      const refusedAt = this.refused.get(n.metadata.uid ?? '')?.at;
      return refusedAt === undefined || now - refusedAt > NOT_OURS_RETRY_MS;
    });
    if (todo.length === 0) return { nodes, problems: [], ...this.refusalsOf(nodes, now) };
    const written = new Map<string, Record<string, string>>();
    const problems: RolloutProblem[] = [];
    await mapConcurrently(todo, { concurrency: CONCURRENCY }, async (node) => {
      try {
        const add = await this.lookup(node);
        await this.client.patch(
          Nodes,
          node.metadata.name!,
          undefined,
          { metadata: { annotations: add } },
          { type: 'merge' },
        );
        written.set(node.metadata.name!, add);
      } catch (err) {
        if (isNotFound(err)) return; // deleted meanwhile
        const message = err instanceof Error ? err.message : String(err);
        const said = `cloud: cannot annotate node ${node.metadata.name}: ${message}`;
        if (!(err instanceof CloudError && err.retryable))
          this.refused.set(node.metadata.uid ?? '', { at: now, message: said });
        else problems.push({ cause: 'cloudError', message: said });
        log.warn({ node: node.metadata.name, err: message }, 'cannot annotate node');
      }
    });
    return {
      nodes: nodes.map((n) => {
        const add = written.get(n.metadata.name!);
        return add
          ? { ...n, metadata: { ...n.metadata, annotations: { ...n.metadata.annotations, ...add } } }
          : n;
      }),
      problems,
      ...this.refusalsOf(nodes, now),
    };
  }

  /** The nodes refused within the retry period, and why. */
  private refusalsOf(nodes: readonly Node[], now: number): Pick<AnnotateResult, 'refused' | 'refusals'> {
    const refusals: Refusal[] = [];
    for (const n of nodes) {
      const uid = n.metadata.uid ?? '';
      const r = this.refused.get(uid);
      if (r === undefined || now - r.at > NOT_OURS_RETRY_MS) continue;
      refusals.push({ node: n.metadata.name ?? '', key: `${uid}@${r.at}`, message: r.message });
    }
    return { refused: new Set(refusals.map((r) => r.node)), refusals };
  }

  private async lookup(node: Node): Promise<Record<string, string>> {
    const providerID = node.spec!.providerID!;
    const ann = node.metadata.annotations ?? {};
    const [group, image] = await Promise.all([
      ann[A.scalingGroup] ?? this.cloud.scalingGroupId(providerID),
      ann[A.image] ?? this.cloud.nodeImage(providerID),
    ]);
    return { [A.scalingGroup]: group, [A.image]: image };
  }
}
