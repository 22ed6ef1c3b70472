// AutoscalingStrategyReconciler: runs the cluster autoscaler's Deployment (one
// replica when enabled, none otherwise) and gives it one --nodes=min:max:name
// argument per worker group that allows autoscaling. The Deployment is
// written only when it drifts from that, and status reports what it runs.
// Anchor: the Constellation AutoscalingStrategy controller (upgrades.md §3).
// Unlike the anchor's NodeVersion controller we never force spec.enabled back
// on: ours pauses the autoscaler for a rollout and restores what the user had.
import { isDeepStrictEqual } from 'node:util';
import {
  AutoscalingStrategies,
  type AutoscalingStrategy,
  type AutoscalingStrategySpecType,
  type AutoscalingStrategyStatusType,
  type ScalingGroup,
  ScalingGroups,
} from '../../api/upgrade.ts';
import type { KubeClient } from '../../runtime/client.ts';
import { isConflict, isNotFound } from '../../runtime/errors.ts';
import type { EventRecorder } from '../../runtime/events.ts';
import {
  type CacheReader,
  type ControllerHost,
  type ReconcilerDeps,
  reconcilerDeps,
} from '../../runtime/host.ts';
import { generationChanged } from '../../runtime/predicates.ts';
import {
  done,
  type ReconcileContext,
  type Request,
  type Result,
  requeueAfter,
} from '../../runtime/reconcile.ts';
import { Deployments, type K8sObject } from '../../runtime/resources.ts';
import { CONFLICT_REQUEUE_MS, updateStatusIfChanged } from '../../runtime/status.ts';

const AS = AutoscalingStrategies.type;
const SG = ScalingGroups.type;
const BY_DEPLOYMENT = 'autoscalingstrategy.deployment';

export const AUTOSCALER_BINARY = './cluster-autoscaler';
/** Bounds of a group that names none: the ones discovered groups get (the anchor's defaults). */
export const DEFAULT_MIN = 1;
export const DEFAULT_MAX = 10;
/** A missing Deployment may yet be installed (Helm ordering); look again this often. */
const MISSING_DEPLOYMENT_MS = 30_000;

type StrategyObject = AutoscalingStrategy & K8sObject;
type ScalingGroupObject = ScalingGroup & K8sObject;

interface Container {
  name: string;
  command?: string[];
  [k: string]: unknown;
}
export type DeploymentObject = K8sObject & {
  spec?: { replicas?: number; template?: { spec?: { containers?: Container[] } } };
};

/** The autoscaler's `--nodes` argument for a group, or undefined when it must not scale it. */
export function nodeGroupArg(sg: Pick<ScalingGroup, 'spec'> & { metadata?: K8sObject['metadata'] }) {
  const s = sg.spec;
  if (!s.autoscaling || s.role === 'ControlPlane' || sg.metadata?.deletionTimestamp) return undefined;
  return `--nodes=${s.min ?? DEFAULT_MIN}:${s.max ?? DEFAULT_MAX}:${s.autoscalerGroupName || s.groupId}`;
}

/** The autoscaler's command: the binary, the extra flags, then the node groups, each part sorted. */
export function autoscalerCommand(
  extraArgs: Record<string, string> | undefined,
  groups: readonly (Pick<ScalingGroup, 'spec'> & { metadata?: K8sObject['metadata'] })[],
): string[] {
  const extra = Object.entries(extraArgs ?? {}).map(([k, v]) => `--${k}=${v}`);
  const nodes = groups.map(nodeGroupArg).filter((a): a is string => a !== undefined);
  // Sorted so the same groups in any cache order give the same command, and no needless rollout.
  return [AUTOSCALER_BINARY, ...extra.sort(), ...[...new Set(nodes)].sort()];
}

export interface AutoscalerShape {
  replicas: number;
  command: string[];
}

export function desiredAutoscaler(
  spec: Pick<AutoscalingStrategySpecType, 'enabled' | 'autoscalerExtraArgs'>,
  groups: Parameters<typeof autoscalerCommand>[1],
): AutoscalerShape {
  return { replicas: spec.enabled ? 1 : 0, command: autoscalerCommand(spec.autoscalerExtraArgs, groups) };
}

/**
 * The Deployment changed to the desired shape, or undefined when it already is.
 * Only replicas and the first container's command are ours; the rest is left as found.
 */
export function applyAutoscaler(
  deployment: DeploymentObject,
  want: AutoscalerShape,
): DeploymentObject | undefined {
  const first = deployment.spec?.template?.spec?.containers?.[0];
  if (!first) return undefined;
  // The API server defaults replicas to 1 when absent.
  const replicas = deployment.spec?.replicas ?? 1;
  if (replicas === want.replicas && isDeepStrictEqual(first.command ?? [], want.command)) return undefined;
  const next = structuredClone(deployment);
  next.spec!.replicas = want.replicas;
  next.spec!.template!.spec!.containers![0]!.command = [...want.command];
  return next;
}

export function setupAutoscalingStrategies(host: ControllerHost): void {
  const r = new AutoscalingStrategyReconciler(reconcilerDeps(host, 'nodewarden.dev/autoscalingstrategy'));
  host.cache.addIndex<StrategyObject>(AS, BY_DEPLOYMENT, (as) => [
    `${as.spec.deploymentNamespace}/${as.spec.deploymentName}`,
  ]);
  const everyStrategy = () => host.cache.list<StrategyObject>(AS).map((as) => ({ name: as.metadata.name! }));
  host
    .controller('autoscalingstrategy')
    .for(AS, { predicates: [generationChanged] })
    // min, max, autoscaling, role and name are all spec: the generation moves with each.
    .watches(SG, everyStrategy, { predicates: [generationChanged] })
    // Someone else scaling or editing the Deployment is drift to undo; its status churn is not.
    .watches(
      Deployments,
      (d) =>
        host.cache
          .byIndex<StrategyObject>(AS, BY_DEPLOYMENT, `${d.metadata?.namespace}/${d.metadata?.name}`)
          .map((as) => ({ name: as.metadata.name! })),
      { predicates: [generationChanged] },
    )
    .complete((req, ctx) => r.reconcile(req, ctx));
}

export class AutoscalingStrategyReconciler {
  private readonly client: KubeClient;
  private readonly cache: CacheReader;
  private readonly events: EventRecorder;

  constructor(ctx: ReconcilerDeps) {
    this.client = ctx.client;
    this.cache = ctx.cache;
    this.events = ctx.events;
  }

  async reconcile(req: Request, ctx: ReconcileContext): Promise<Result> {
    const as = this.cache.get<StrategyObject>(AS, req.name);
    if (!as || as.metadata.deletionTimestamp) return done();
    const { deploymentName: name, deploymentNamespace: namespace } = as.spec;
    const deployment = this.cache.get<DeploymentObject>(Deployments, name, namespace);
    if (!deployment) {
      this.events.warning(
        as,
        'DeploymentNotFound',
        'ScaleAutoscaler',
        `Deployment ${namespace}/${name} does not exist`,
      );
      return this.save(as, { enabled: false, replicas: 0 }, requeueAfter(MISSING_DEPLOYMENT_MS));
    }
    if (!deployment.spec?.template?.spec?.containers?.length) {
      this.events.warning(
        as,
        'DeploymentInvalid',
        'ScaleAutoscaler',
        `Deployment ${namespace}/${name} has no container`,
      );
      return done(); // a Deployment edit brings us back
    }
    const want = desiredAutoscaler(as.spec, this.cache.list<ScalingGroupObject>(SG));
    let current = deployment;
    const next = applyAutoscaler(deployment, want);
    if (next) {
      try {
        current = await this.client.update<DeploymentObject>(Deployments, next);
      } catch (err) {
        if (isConflict(err)) return requeueAfter(CONFLICT_REQUEUE_MS); // a newer version is on its way through the cache
        if (isNotFound(err)) return requeueAfter(MISSING_DEPLOYMENT_MS);
        throw err;
      }
      ctx.log.info({ deployment: `${namespace}/${name}`, ...want }, 'autoscaler deployment updated');
      this.events.normal(
        as,
        'AutoscalerUpdated',
        'ScaleAutoscaler',
        `Deployment ${namespace}/${name}: ${want.replicas} replica(s), ${want.command.length - 1} argument(s)`,
      );
    }
    const replicas = current.spec?.replicas ?? 1;
    return this.save(as, { enabled: replicas > 0, replicas }, done());
  }

  /** Writes status only when it changed. */
  private async save(as: StrategyObject, status: AutoscalingStrategyStatusType, result: Result) {
    try {
      await updateStatusIfChanged(this.client, AS, as, status, { write: 'merge' });
    } catch (err) {
      if (isNotFound(err)) return done();
      throw err;
    }
    return result;
  }
}
