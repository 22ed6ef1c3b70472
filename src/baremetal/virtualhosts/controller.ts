// VirtualHostPoolReconciler: observe the pool, its nodes and what exists, plan
// (plan.ts), then act in an order that never leaves half a host: give up what
// is no longer wanted (host first, then VM, Secrets, addresses), address
// the hypervisor nodes, then per VM allocate every address before making
// anything, define the VM on its node's hypervisor (hypervisors/), write its
// Secrets and its BareMetalHost.
// Parity anchor: ViNO's vino_controller.go and bmh.go (baremetal.md §4). Ours
// releases (scale-down, a node leaving, deletion), waits for the agent with a
// requeue instead of a blocking 180 s wait, and updates hosts it made.
import { type BareMetalHost, BareMetalHosts } from '../../api/baremetal.ts';
import { VirtualHostPools } from '../../api/virtualhosts.ts';
import type { KubeClient } from '../../runtime/client.ts';
import { findCondition, setCondition } from '../../runtime/conditions.ts';
import { isNotFound } from '../../runtime/errors.ts';
import type { EventRecorder } from '../../runtime/events.ts';
import { hasFinalizer, patchFinalizer } from '../../runtime/finalizers.ts';
import type { CacheReader, ReconcilerDeps } from '../../runtime/host.ts';
import {
  done,
  type ReconcileContext,
  type Request,
  type Result,
  requeueAfter,
} from '../../runtime/reconcile.ts';
import { DaemonSets, type K8sObject, Nodes, Pods, RoleBindings, Secrets } from '../../runtime/resources.ts';
import { updateStatusIfChanged } from '../../runtime/status.ts';
import type { PoolSpec } from '../ipam/allocate.ts';
import { IPPoolStore } from '../ipam/store.ts';
import { PoolAddresses } from './addresses.ts';
import { applyAgent } from './apply-agent.ts';
import type { HeldVm, HypervisorSource, Hypervisors } from './hypervisors/hypervisor.ts';
import { agentRoleBinding } from './hypervisors/libvirt/agent-pod.ts';
import { AGENTS_NAMESPACE } from './hypervisors/libvirt/agent-protocol.ts';
import { makeVm, type VmContext } from './make-vm.ts';
import { addressesExhausted, hostsReleased } from './metrics.ts';
import { holdsEntry, nodeNetworkValues, setNetworkValues } from './node-annotation.ts';
import {
  AGENT_LABEL,
  AGENT_NAME,
  agentName,
  FINALIZER,
  machineId,
  nodeOfOwner,
  POOL_LABEL,
  type Pool,
  vmOfLabels,
  vmOfOwner,
} from './objects.ts';
import { type NodeView, type PoolPlan, planPool, type VmRef } from './plan.ts';
import { type FoundHypervisors, releaseVm } from './release-vm.ts';
import { poolStatus, type RoundOutcome, readyCondition } from './status.ts';

const VHP = VirtualHostPools.type;
const BMH = BareMetalHosts.type;

/** While a given-up host is being deleted: its deletion is usually quick. */
const RELEASE_POLL_MS = 1_000;
/** While agent pods start; after AGENT_PATIENCE_MS of waiting, more slowly (and the condition says so). */
const AGENT_POLL_MS = 5_000;
const AGENT_SLOW_POLL_MS = 30_000;
const AGENT_PATIENCE_MS = 180_000;
/** Without hypervisors to define VMs on, look again now and then (they may come up later). */
const NO_HYPERVISOR_POLL_MS = 30_000;

type Node = K8sObject & { metadata: { name: string; labels?: Record<string, string> } };

export class VirtualHostPoolReconciler {
  private readonly client: KubeClient;
  private readonly cache: CacheReader;
  private readonly events: EventRecorder;
  private readonly hypervisors: HypervisorSource;
  private readonly store: IPPoolStore;

  constructor(ctx: ReconcilerDeps, hypervisors: HypervisorSource) {
    this.client = ctx.client;
    this.cache = ctx.cache;
    this.events = ctx.events;
    this.hypervisors = hypervisors;
    this.store = new IPPoolStore(ctx.client);
  }

  async reconcile(req: Request, ctx: ReconcileContext): Promise<Result> {
    const pool = this.cache.get<Pool>(VHP, req.name, req.namespace);
    if (!pool) return done();
    const deleting = Boolean(pool.metadata.deletionTimestamp);
    if (deleting && !hasFinalizer(pool, FINALIZER)) return done();
    if (!deleting && (await patchFinalizer(this.client, VHP, pool, FINALIZER, 'add'))) return done(); // back with the new copy

    const addresses = new PoolAddresses(this.store, pool);
    // A lookup that failed is not "no hypervisors": VMs are not given up on it (release-vm.ts).
    let hv: Hypervisors | undefined;
    let lookupError: string | undefined;
    try {
      hv = await this.hypervisors.find();
    } catch (err) {
      ctx.log.warn({ err }, `cannot find ${this.hypervisors.name}`);
      lookupError = `cannot find ${this.hypervisors.name}: ${(err as Error).message}`;
    }
    const found: FoundHypervisors = hv ?? (lookupError ? 'unknown' : 'none');
    let specs: Map<string, PoolSpec> | undefined;
    if (!deleting) {
      await applyAgent(this.client, this.cache, pool, hv?.agent ?? this.hypervisors.agentWhenNone);
      const ensured = await addresses.ensure();
      specs = ensured.specs;
      const invalid = ensured.failures;
      if (invalid.length > 0) {
        const message = invalid.map((f) => f.message).join('; ');
        this.events.warning(pool, 'InvalidNetwork', 'AllocateAddresses', message);
        await this.writeCondition(pool, 'InvalidNetwork', message);
        return done();
      }
    }

    const { plan, hosts, agents } = await this.observe(pool, specs ?? (await addresses.read()), deleting);
    const releasing = await this.giveUp(pool, plan, hosts, addresses, found, ctx);
    await this.releaseHypervisors(pool, plan, addresses);

    if (deleting) return this.finishDeletion(pool, releasing, addresses, ctx);

    const outcome: RoundOutcome = {
      plan,
      hypervisorAddresses: new Map(),
      vmAddresses: new Map(),
      hosts,
      made: new Set(),
      exhausted: new Map(),
      hypervisorFailures: [],
      vmErrors: new Map(),
      releasing,
      agentReady: agents,
    };
    if (!hv) {
      outcome.noHypervisor = lookupError ?? this.hypervisors.missing;
      // VMs left to give up wait for the lookup, not for the slow poll of a cluster without hypervisors.
      return this.finish(
        pool,
        outcome,
        requeueAfter(releasing.length > 0 ? RELEASE_POLL_MS : NO_HYPERVISOR_POLL_MS),
      );
    }
    await this.makeHosts(pool, hv, addresses, outcome);

    let next: Result = done();
    if (releasing.length > 0) next = requeueAfter(RELEASE_POLL_MS);
    else if (plan.waiting.length > 0) next = requeueAfter(this.agentPoll(pool));
    else if (outcome.vmErrors.size > 0) next = requeueAfter(NO_HYPERVISOR_POLL_MS);
    return this.finish(pool, outcome, next);
  }

  /** Addresses the hypervisor nodes, then makes every ready VM whose addresses are all held. */
  private async makeHosts(
    pool: Pool,
    hv: Hypervisors,
    addresses: PoolAddresses,
    outcome: RoundOutcome,
  ): Promise<void> {
    const { plan, hosts } = outcome;
    const hyp = await addresses.hypervisors(plan.hypervisors);
    outcome.hypervisorAddresses = hyp.got;
    outcome.hypervisorFailures = hyp.failures;
    for (const node of plan.hypervisors)
      await setNetworkValues(this.client, this.cache, pool, node, nodeNetworkValues(pool, hyp.got.get(node)));

    const vms = await addresses.vms(plan.ready, (vm) => !hosts.has(vm.name));
    outcome.vmAddresses = vms.got;
    outcome.exhausted = vms.failures;
    addressesExhausted.inc(vms.failures.size);
    for (const [name, f] of vms.failures)
      this.events.warning(
        pool,
        'AddressesExhausted',
        'AllocateAddresses',
        `${name}: network ${f.network}: ${f.message}`,
      );
    const vmCtx: VmContext = {
      client: this.client,
      cache: this.cache,
      events: this.events,
      hypervisors: hv,
      pool,
    };
    const held = await heldVms(hv, plan.hypervisors);
    const ns = pool.metadata.namespace!;
    for (const vm of plan.ready) {
      const nics = vms.got.get(vm.name);
      if (!nics) continue;
      const onNode = held.get(vm.node);
      const r = await makeVm(
        vmCtx,
        vm,
        nics,
        hosts.get(vm.name),
        hyp.got.get(vm.node),
        this.nodeLabels(vm.node),
        onNode ? (onNode.get(machineId(ns, vm.name)) ?? null) : undefined,
      );
      if (r.kind === 'made') {
        outcome.made.add(vm.name);
        hosts.set(vm.name, r.host);
      } else if (r.kind === 'error') outcome.vmErrors.set(vm.name, { reason: r.reason, message: r.message });
    }
  }

  /** The pool is going: once every host is gone, the agent, the IPPools and the finalizer follow. */
  private async finishDeletion(
    pool: Pool,
    releasing: string[],
    addresses: PoolAddresses,
    ctx: ReconcileContext,
  ): Promise<Result> {
    if (releasing.length > 0) return requeueAfter(RELEASE_POLL_MS);
    await this.client.delete(DaemonSets, agentName(pool.metadata.name!), pool.metadata.namespace, {
      ignoreNotFound: true,
    });
    // In kube-system, so no owner reference takes it away with the pool.
    const binding = agentRoleBinding(pool.metadata.namespace!, pool.metadata.name!);
    await this.client.delete(RoleBindings, binding, AGENTS_NAMESPACE, { ignoreNotFound: true });
    await addresses.deleteAll();
    await patchFinalizer(this.client, VHP, pool, FINALIZER, 'remove');
    ctx.log.info({}, 'virtual host pool released everything');
    return done();
  }

  /** Everything that exists of the pool, and the plan for it. */
  private async observe(
    pool: Pool,
    specs: Map<string, PoolSpec>,
    deleting: boolean,
  ): Promise<{ plan: PoolPlan; hosts: Map<string, BareMetalHost>; agents: Set<string> }> {
    const ns = pool.metadata.namespace!;
    const name = pool.metadata.name!;
    const mine = { namespace: ns, labelSelector: `${POOL_LABEL}=${name}` };
    const hostList = this.cache.list<BareMetalHost & K8sObject>(BMH, mine);
    const secrets = this.cache.list(Secrets, mine);
    const existingVms: VmRef[] = [];
    const existingHypervisors = new Set<string>();
    for (const o of [...hostList, ...secrets]) {
      const vm = vmOfLabels(o.metadata?.labels);
      if (vm) existingVms.push(vm);
    }
    for (const spec of specs.values())
      for (const a of [...(spec.allocations ?? []), ...(spec.dhcpAllocations ?? [])]) {
        const vm = vmOfOwner(a.owner);
        if (vm) existingVms.push(vm);
        const node = nodeOfOwner(a.owner);
        if (node) existingHypervisors.add(node);
      }
    const key = `${ns}/${name}`;
    const nodes: NodeView[] = this.cache.list<Node>(Nodes).map((n) => {
      if (holdsEntry(n, key)) existingHypervisors.add(n.metadata.name);
      return {
        name: n.metadata.name,
        labels: n.metadata.labels ?? {},
        deleting: !!n.metadata.deletionTimestamp,
      };
    });
    const agents = this.readyAgents(pool);
    const plan = planPool({
      pool: name,
      spec: pool.spec,
      deleting,
      nodes,
      existingVms,
      existingHypervisors: [...existingHypervisors],
      agentReady: agents,
    });
    const hosts = new Map(hostList.map((h) => [h.metadata.name!, h as BareMetalHost]));
    return { plan, hosts, agents };
  }

  /** Nodes where the pool's agent pod runs and is ready (kwok's simulated pods included). */
  private readyAgents(pool: Pool): Set<string> {
    const pods = this.cache.list<
      K8sObject & {
        spec?: { nodeName?: string };
        status?: { conditions?: { type: string; status: string }[] };
      }
    >(Pods, {
      namespace: pool.metadata.namespace,
      labelSelector: `${AGENT_LABEL}=${AGENT_NAME},${POOL_LABEL}=${pool.metadata.name}`,
    });
    const ready = new Set<string>();
    for (const p of pods)
      if (
        p.spec?.nodeName &&
        !p.metadata?.deletionTimestamp &&
        p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')
      )
        ready.add(p.spec.nodeName);
    return ready;
  }

  /** How soon to look again for agents: soon at first, then every 30 s once the wait has gone on for 3 minutes. */
  private agentPoll(pool: Pool): number {
    const c = findCondition(pool.status?.conditions as never, 'Ready');
    const since = c?.reason === 'AgentNotReady' ? Date.parse(c.lastTransitionTime) : Date.now();
    return Date.now() - since > AGENT_PATIENCE_MS ? AGENT_SLOW_POLL_MS : AGENT_POLL_MS;
  }

  /**
   * Gives up the planned VMs: the host first (whoever manages it may still
   * need the BMC and its Secret while it deprovisions), then, once it is
   * gone, the machine, the addresses and the Secrets. Answers the hosts still
   * going, and the VMs whose hypervisors could not be looked up this round.
   */
  private async giveUp(
    pool: Pool,
    plan: PoolPlan,
    hosts: Map<string, BareMetalHost>,
    addresses: PoolAddresses,
    hv: FoundHypervisors,
    ctx: ReconcileContext,
  ): Promise<string[]> {
    const ns = pool.metadata.namespace!;
    const releasing: string[] = [];
    for (const vm of plan.giveUp) {
      const host = hosts.get(vm.name);
      if (host) {
        if (!host.metadata.deletionTimestamp)
          await this.client.delete(BMH, vm.name, ns, {
            ignoreNotFound: true,
            preconditions: { uid: host.metadata.uid },
          });
        releasing.push(vm.name);
        hosts.delete(vm.name);
        continue;
      }
      if (!(await releaseVm({ client: this.client, hv, addresses }, ns, vm))) {
        releasing.push(vm.name);
        continue;
      }
      ctx.log.info({ host: vm.name, cause: vm.cause }, 'host released');
      hostsReleased.inc({ cause: vm.cause });
      this.events.normal(
        pool,
        'HostReleased',
        'ReleaseHost',
        `${vm.name} released (${vm.cause}): host, machine, Secrets and addresses`,
      );
    }
    return releasing;
  }

  /** Nodes the pool no longer uses: their bridge addresses, DHCP blocks and annotation entry go. */
  private async releaseHypervisors(pool: Pool, plan: PoolPlan, addresses: PoolAddresses): Promise<void> {
    if (plan.releaseHypervisors.length === 0) return;
    const gone = new Set(plan.releaseHypervisors.map((r) => r.node));
    await addresses.release((o) => gone.has(nodeOfOwner(o) ?? ''));
    for (const { node } of plan.releaseHypervisors)
      await setNetworkValues(this.client, this.cache, pool, node, undefined);
  }

  private nodeLabels(node: string): Record<string, string> {
    return this.cache.get<Node>(Nodes, node)?.metadata.labels ?? {};
  }

  private async writeCondition(pool: Pool, reason: string, message: string): Promise<void> {
    const conditions = setCondition(pool.status?.conditions as never, {
      type: 'Ready',
      status: 'False',
      reason,
      message,
      observedGeneration: pool.metadata.generation,
    });
    await updateStatusIfChanged(
      this.client,
      VHP,
      pool,
      { ...pool.status, conditions, observedGeneration: pool.metadata.generation } as never,
      {
        write: 'merge',
      },
    ).catch((err: unknown) => {
      if (!isNotFound(err)) throw err;
    });
  }

  private async finish(pool: Pool, outcome: RoundOutcome, result: Result): Promise<Result> {
    const ready = readyCondition(outcome);
    const before = findCondition(pool.status?.conditions as never, 'Ready');
    if (before?.reason !== ready.reason && ready.status === 'True')
      this.events.normal(pool, 'HostsCreated', 'CreateHosts', ready.message);
    const status = poolStatus(pool.status, pool.metadata.generation, outcome, ready);
    try {
      await updateStatusIfChanged(this.client, VHP, pool, status, { write: 'merge' });
    } catch (err) {
      if (isNotFound(err)) return done();
      throw err;
    }
    return result;
  }
}

/**
 * Each node's VMs by id, as its hypervisor lists them; a node whose hypervisor did not answer is
 * left out (its VMs are taken as they are). WHY: a VM host whose libvirtd lost its domains (its
 * agent started again with a fresh one) answers without them, and their hosts are otherwise up
 * to date: only the hypervisor's list shows they must be defined again.
 */
async function heldVms(hv: Hypervisors, nodes: readonly string[]): Promise<Map<string, Map<string, HeldVm>>> {
  const out = new Map<string, Map<string, HeldVm>>();
  for (const node of nodes) {
    const vms = await hv
      .of(node)
      .list()
      .catch(() => undefined);
    if (vms) out.set(node, new Map(vms.map((v) => [v.id, v])));
  }
  return out;
}
