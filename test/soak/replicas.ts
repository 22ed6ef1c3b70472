// The operator under test: N replicas with leader election, each reaching the
// API server through its own ApiProxy (which records its writes and can be
// partitioned). Killed replicas are started again; restarts are counted.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { KubeClient } from '../../src/runtime/client.ts';
import type { KubeConfig } from '../../src/runtime/kubeconfig.ts';
import { type K8sObject, Leases } from '../../src/runtime/resources.ts';
import { type OperatorProcess, startOperator } from '../harness/operator.ts';
import { ApiProxy } from './api-proxy.ts';
import type { WriteRecord } from './invariants.ts';

export const LEASE_NAME = 'nodewarden-soak';
const CONTROLLERS =
  'nodemaintenance,nodeversion,scalinggroup,pendingnode,autoscalingstrategy,baremetalhost,virtualhostpool,tenantcluster,kvmcluster,kvm-vm-drain';
/**
 * How often the host controller reads every BMC again (the operator's default is 60 s): the
 * power invariant's bound is one of these plus a margin, and a soak of minutes needs it short.
 */
export const BAREMETAL_RESYNC_MS = 5_000;

export interface Replica {
  name: string;
  proxy: ApiProxy;
  process: OperatorProcess | undefined;
}

export class Replicas {
  readonly all: Replica[] = [];
  restarts = 0;
  /** Every process started, for its logs (written out at the end). */
  readonly launched: { name: string; process: OperatorProcess }[] = [];
  private readonly namespace: string;
  private readonly dir: string;
  /** More flags for every replica (the libvirt share's `--vm-hypervisors libvirt`). */
  private readonly extraArgs: readonly string[];

  private constructor(namespace: string, dir: string, extraArgs: readonly string[]) {
    this.namespace = namespace;
    this.dir = dir;
    this.extraArgs = extraArgs;
  }

  static async start(
    kc: KubeConfig,
    count: number,
    namespace: string,
    dir: string,
    extraArgs: readonly string[] = [],
  ): Promise<Replicas> {
    const r = new Replicas(namespace, dir, extraArgs);
    for (let i = 0; i < count; i++) {
      const name = `replica-${i}`;
      r.all.push({ name, proxy: await ApiProxy.start(name, kc), process: undefined });
    }
    for (const rep of r.all) r.launch(rep);
    return r;
  }

  get leasePath(): string {
    return `/apis/coordination.k8s.io/v1/namespaces/${this.namespace}/leases/${LEASE_NAME}`;
  }

  writes(): WriteRecord[] {
    return this.all.flatMap((r) => r.proxy.writes).sort((a, b) => a.at - b.at);
  }

  /** The replica named by the Lease's holder (identity `<POD_NAME>_<uuid>`), if any. */
  static holderName(identity: string | undefined): string | undefined {
    return identity ? identity.split('_')[0] : undefined;
  }

  async holder(client: KubeClient): Promise<string | undefined> {
    return (await this.lease(client)).holder;
  }

  /** The holder and when it last renewed the Lease (epoch ms), as the API server has it. */
  async lease(client: KubeClient): Promise<{ holder: string | undefined; renewedAt: number | undefined }> {
    const lease = await client
      .get<K8sObject & { spec?: { holderIdentity?: string; renewTime?: string } }>(
        Leases,
        LEASE_NAME,
        this.namespace,
      )
      .catch(() => undefined);
    const renewedAt = Date.parse(lease?.spec?.renewTime ?? '');
    return {
      holder: Replicas.holderName(lease?.spec?.holderIdentity),
      renewedAt: Number.isNaN(renewedAt) ? undefined : renewedAt,
    };
  }

  /** When the replica's running process began waiting for the lease (epoch ms), by its own log. */
  watchingSince(r: Replica | undefined): number | undefined {
    const line = r?.process?.logs.find((l) => l.msg === 'waiting for leadership');
    const at = Date.parse(String(line?.time ?? ''));
    return Number.isNaN(at) ? undefined : at;
  }

  byName(name: string | undefined): Replica | undefined {
    return this.all.find((r) => r.name === name);
  }

  async kill(r: Replica): Promise<void> {
    const p = r.process;
    r.process = undefined; // first: its exit is ours, not one to restart
    await p?.stop('SIGKILL');
  }

  restart(r: Replica): void {
    this.restarts++;
    this.launch(r);
  }

  async stopAll(): Promise<void> {
    this.stopping = true;
    for (const r of this.all) {
      await this.kill(r);
      await r.proxy.close();
    }
    // Each process's JSON log, for reading a failed run afterwards.
    this.launched.forEach((l, i) => {
      writeFileSync(
        join(this.dir, `${String(i).padStart(2, '0')}-${l.name}.log`),
        l.process.logs.map((x) => JSON.stringify(x)).join('\n'),
      );
    });
  }

  /** Replicas that exited on their own (a leader that lost its lease exits) and were started again. */
  selfExits = 0;
  private stopping = false;

  private launch(r: Replica): void {
    const kubeconfig = join(this.dir, `${r.name}.kubeconfig`);
    writeFileSync(kubeconfig, r.proxy.kubeconfig());
    r.process = startOperator(
      [
        '--cloud-provider',
        'simulated',
        '--controllers',
        CONTROLLERS,
        '--webhook-bind-address',
        '0',
        '--maintenance-lease-namespace',
        this.namespace,
        '--leader-elect',
        '--leader-election-namespace',
        this.namespace,
        '--leader-election-id',
        LEASE_NAME,
        '--baremetal-resync',
        `${BAREMETAL_RESYNC_MS / 1000}s`,
        ...this.extraArgs,
      ],
      { kubeconfig, env: { POD_NAME: r.name } },
    );
    this.launched.push({ name: r.name, process: r.process });
    // As a Deployment's pod is restarted: one that exits by itself comes back after a second.
    const p = r.process;
    void p.exited.then(() => {
      if (this.stopping || r.process !== p) return;
      this.selfExits++;
      setTimeout(() => {
        if (!this.stopping && r.process === p) this.restart(r);
      }, 1_000);
    });
  }
}
