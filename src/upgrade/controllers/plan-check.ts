// The rollout applier's questions to the API server before the actions never taken back (a
// surplus mark, a never-joined deletion, a launch): does the API server hold what the plan, made
// from the cache, saw? A replica that just took the lease, or one whose informer is behind, may
// plan from a view the API server no longer holds; each check here was found by the fault soak.
import type { KubeClient } from '../../runtime/client.ts';
import { isNotFound } from '../../runtime/errors.ts';
import { liveness } from '../../runtime/live.ts';
import type { ReconcileContext } from '../../runtime/reconcile.ts';
import { Nodes } from '../../runtime/resources.ts';
import { Upgrade } from '../names.ts';
import type { NodeObject } from '../rollout/observe.ts';

const A = Upgrade.annotations;

/** One round's checks: answers are kept per group, and the round's own annotations are allowed for. */
export class PlanCheck {
  private readonly client: KubeClient;
  private readonly node: (name: string) => NodeObject | undefined;
  private readonly log: ReconcileContext['log'];
  /** stillOutdated's answer per group, this round. */
  private readonly outdatedConfirmed = new Map<string, Promise<boolean>>();
  /** The annotations this round wrote, by node (null: removed): the API server holds them, the cache not yet. */
  private readonly annotated = new Map<string, Record<string, string | null>>();

  constructor(
    client: KubeClient,
    node: (name: string) => NodeObject | undefined,
    log: ReconcileContext['log'],
  ) {
    this.client = client;
    this.node = node;
    this.log = log;
  }

  /** Told of every annotation the round writes. */
  wrote(node: string, annotations: Record<string, string | null>): void {
    this.annotated.set(node, { ...this.annotated.get(node), ...annotations });
  }

  /**
   * Whether a node the plan marks surplus is, read live, as the plan saw it (and, for an heir
   * given up, its donor still there). WHY: the plan comes from the cache, and a replica that just
   * took the lease may hold one its watches stopped feeding (a partition). The soak saw new leaders
   * give up an heir that had joined, replaced its donor and turned Ready, and take heirs already
   * released from their donors for mints without one; each was drained and deleted, and the group
   * stayed short (seed 20261124). A surplus mark is never taken back; a round skipped costs little.
   */
  async stillSurplus(node: string, donor: string | undefined): Promise<boolean> {
    const cached = this.node(node);
    const live = cached ? await liveness(this.client, Nodes, cached) : 'gone';
    const donorGone =
      donor !== undefined &&
      (await this.client.get(Nodes, donor).then(
        () => false,
        (err: unknown) => (isNotFound(err) ? true : Promise.reject(err)),
      ));
    if (live === 'current' && !donorGone) return true;
    this.log.info({ node, donor, live, donorGone }, 'not marked surplus: the cache was behind');
    return false;
  }

  /**
   * Whether the API server holds the node of a Join past its deadline as the plan saw it: absent,
   * or as cached (registered, not yet annotated). WHY: a replica that had just taken the lease, its
   * connections being reset, planned from a cache in which a node that had registered and turned
   * Ready 45 s before had not joined; it deleted the instance as never joined and launched another
   * (seed 20261124, busy cores: 6 instances for a group of 5). A deleted instance is not taken back.
   */
  async stillUnjoined(node: string): Promise<boolean> {
    const cached = this.node(node);
    const live = cached
      ? await liveness(this.client, Nodes, cached)
      : await this.client.get(Nodes, node).then(
          () => 'registered' as const,
          (err: unknown) => (isNotFound(err) ? ('current' as const) : Promise.reject(err)),
        );
    if (live === 'current') return true;
    this.log.info({ node, live }, 'not deleted as never joined: the cache was behind');
    return false;
  }

  /**
   * Whether the API server holds each outdated node a launch was counted from as the plan saw it:
   * the same object (uid), still unpaired and outdated. Asked once per group and round. WHY: a
   * replica that took the lease after a partition launched two instances into a group 0.3 s after
   * taking over, counted from two outdated nodes its cache still held 20 s after they had been
   * replaced and deleted (seed 20261124, busy cores): 7 launched for 5, one left as a sixth node.
   * A launch is not taken back; a round skipped costs little.
   */
  async stillOutdated(group: string, outdated: readonly string[]): Promise<boolean> {
    let answer = this.outdatedConfirmed.get(group);
    if (!answer) {
      answer = this.liveNodes(outdated).then((live) => {
        const behind = outdated.filter((name) => !this.asPlanned(name, live.get(name)));
        if (behind.length) this.log.info({ group, behind }, 'no launch: the cache was behind');
        return behind.length === 0;
      });
      this.outdatedConfirmed.set(group, answer);
    }
    return answer;
  }

  /**
   * The named nodes as the API server holds them (absent: gone): a GET for one, one LIST for
   * several, where a GET each made a launching round cost a request per outdated node it counted.
   */
  private async liveNodes(names: readonly string[]): Promise<Map<string, NodeObject>> {
    const [only] = names;
    if (names.length === 1 && only !== undefined) {
      const node = await this.client.get<NodeObject>(Nodes, only).catch((err: unknown) => {
        if (isNotFound(err)) return undefined;
        throw err;
      });
      return new Map(node ? [[only, node]] : []);
    }
    const wanted = new Set(names);
    const all = names.length ? (await this.client.listAll<NodeObject>(Nodes)).items : [];
    return new Map(
      all.filter((n) => wanted.has(n.metadata.name ?? '')).map((n) => [n.metadata.name ?? '', n]),
    );
  }

  /**
   * Whether the API server holds the node as cached, by what makes a node outdated and free,
   * after this round's own writes (a donor the round paired with a mint was counted as outdated).
   */
  private asPlanned(name: string, live: NodeObject | undefined): boolean {
    const cached = this.node(name);
    if (!cached || !live || live.metadata.uid !== cached.metadata.uid) return false;
    const keys = [A.scalingGroup, A.image, A.donor, A.heir, A.obsolete];
    const wrote = this.annotated.get(name) ?? {};
    const was: Record<string, string | null | undefined> = { ...cached.metadata.annotations, ...wrote };
    const is = live.metadata.annotations ?? {};
    return keys.every((k) => (was[k] ?? undefined) === is[k]);
  }
}
