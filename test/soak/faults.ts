// Carries out the schedule's faults against the running soak: operator
// replicas, the local cluster's control-plane processes, etcd, the replicas'
// roads to the API server, and the simulated cloud's API. Each fault returns
// once it is over (healed, restarted), so faults never overlap.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { Kwokctl } from '../../src/cluster/kwokctl.ts';
import type { LocalClusters } from '../../src/cluster/local-cluster.ts';
import type { KubeClient } from '../../src/runtime/client.ts';
import type { ClusterCloud } from '../harness/cloud.ts';
import type { Replicas } from './replicas.ts';
import { describeFault, type Fault } from './schedule.ts';

export interface FaultRecord {
  /** Ms since the soak started. */
  at: number;
  what: string;
  /** For a leader kill: ms from the kill to another replica holding the lease. */
  failoverMs?: number;
  /** For a leader kill: ms after the kill before the replica that took over watched the lease (0: it already did). */
  standbyLateMs?: number;
  /** For a partition: ms from its start to the standby holding the lease. */
  takeoverMs?: number;
  error?: string;
}

export interface FaultContext {
  clusters: LocalClusters;
  cluster: string;
  client: KubeClient;
  cloud: ClusterCloud;
  replicas: Replicas;
  started: number;
  log: (m: string) => void;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function inject(f: Fault, ctx: FaultContext): Promise<FaultRecord> {
  const rec: FaultRecord = { at: Date.now() - ctx.started, what: describeFault(f) };
  ctx.log(`fault @${(rec.at / 1000).toFixed(1)}s: ${rec.what}`);
  try {
    await run(f, ctx, rec);
  } catch (err) {
    rec.error = (err as Error).message;
    ctx.log(`fault ${rec.what} failed: ${rec.error}`);
  }
  return rec;
}

async function run(f: Fault, ctx: FaultContext, rec: FaultRecord): Promise<void> {
  const { replicas, client } = ctx;
  switch (f.kind) {
    case 'operatorKill': {
      const r = replicas.all[f.replica]!;
      await replicas.kill(r);
      await sleep(f.restartAfterMs);
      replicas.restart(r);
      return;
    }
    case 'leaderKill': {
      const leader = replicas.byName(await replicas.holder(client));
      if (!leader) throw new Error('no replica holds the lease');
      const killed = Date.now();
      await replicas.kill(leader);
      // The killed one comes back after its pause; the failover is timed either way.
      const back = sleep(f.restartAfterMs).then(() => replicas.restart(leader));
      let successor: string | undefined;
      rec.failoverMs = await until(async () => {
        successor = await replicas.holder(client);
        return successor !== undefined && successor !== leader.name;
      }, 60_000).then((ok) => (ok ? Date.now() - killed : undefined));
      const watching = replicas.watchingSince(replicas.byName(successor));
      if (rec.failoverMs !== undefined && watching !== undefined)
        rec.standbyLateMs = Math.max(0, watching - killed);
      await back;
      return;
    }
    case 'apiserverRestart':
      return restartComponent(ctx, 'kube-apiserver');
    case 'etcdRestart':
      return restartComponent(ctx, 'etcd');
    case 'etcdCompaction': {
      await compactEtcd(ctx);
      return restartComponent(ctx, 'kube-apiserver');
    }
    case 'partition': {
      const leader = replicas.byName(await replicas.holder(client));
      if (!leader) throw new Error('no replica holds the lease');
      const from = Date.now();
      leader.proxy.partition(f.mode);
      const tookOver = until(async () => {
        const h = await replicas.holder(client);
        return h !== undefined && h !== leader.name;
      }, f.durationMs).then((ok) => (ok ? Date.now() - from : undefined));
      await sleep(f.durationMs);
      leader.proxy.heal();
      const t = await tookOver;
      if (t !== undefined) rec.takeoverMs = t;
      return;
    }
    case 'cloudApi': {
      await ctx.cloud.call('POST', '/faults', f.faults);
      await sleep(f.durationMs);
      // Clears only the API faults and the slow boot: the never-joining instance stays the cloud's business.
      await ctx.cloud.call('POST', '/faults', {
        failNextCalls: 0,
        throttleNextCalls: 0,
        throttleProbability: 0,
        slowCallsMs: 0,
        slowBootMs: 0,
      });
      return;
    }
  }
}

/**
 * A leader kill's failover counted from when a standby was watching the lease: the goal's
 * measure. WHY: a replica that starts watching must wait a full lease duration from its first
 * look (it cannot know when the lease was last renewed; client-go's rule too), so when the only
 * standby was itself starting at the kill, its start-up adds to the failover and says nothing of
 * the election. Seed 20261124 on busy cores: a partition made the standby exit, it was started
 * again as the partition healed, the leader was killed 0.1 s later, and the standby watched the
 * lease 5.6 s after the kill, took it 15.7 s after that: 21.3 s from the kill.
 */
export function failoverFromStandby(
  f: Pick<FaultRecord, 'failoverMs' | 'standbyLateMs'>,
): number | undefined {
  return f.failoverMs === undefined ? undefined : f.failoverMs - (f.standbyLateMs ?? 0);
}

/** Polls `check` every 250 ms until it holds (true) or `timeoutMs` passes (false). */
export async function until(check: () => Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check().catch(() => false)) return true;
    await sleep(250);
  }
  return false;
}

function kwokctl(ctx: FaultContext): Kwokctl {
  // <workdir>/clusters/<name>
  return new Kwokctl(ctx.clusters.binaries(), dirname(dirname(ctx.clusters.dir(ctx.cluster))));
}

/** Stops one control-plane process and starts it again as `kwokctl start cluster` does. */
async function restartComponent(ctx: FaultContext, component: string): Promise<void> {
  const k = kwokctl(ctx);
  await k.stopComponent(ctx.cluster, component);
  await k.mustRun(['--name', ctx.cluster, 'start', 'cluster', '--wait', '60s']);
}

/** etcd's client URL, from the cluster's kwokctl configuration. */
function etcdUrl(ctx: FaultContext): string {
  const conf = readFileSync(join(ctx.clusters.dir(ctx.cluster), 'kwok.yaml'), 'utf8');
  const m = /--advertise-client-urls=(http:\/\/[^\s,]+)/.exec(conf);
  if (!m) throw new Error('no etcd client URL in kwok.yaml');
  return m[1]!;
}

/** Compacts etcd's history up to its current revision (its JSON gateway). */
async function compactEtcd(ctx: FaultContext): Promise<void> {
  const url = etcdUrl(ctx);
  const post = async (path: string, body: unknown) => {
    const res = await fetch(url + path, { method: 'POST', body: JSON.stringify(body) });
    if (!res.ok) throw new Error(`etcd ${path}: ${res.status} ${await res.text()}`);
    return (await res.json()) as { header?: { revision?: string } };
  };
  const head = await post('/v3/kv/range', { key: Buffer.from('/registry/').toString('base64'), limit: 1 });
  const revision = head.header?.revision;
  if (!revision) throw new Error('etcd did not say its revision');
  await post('/v3/kv/compaction', { revision, physical: true });
  ctx.log(`etcd compacted at revision ${revision}`);
}
