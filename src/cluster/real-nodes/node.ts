// One real node: its files, then its processes in order, each waited for
// before the next (holder → containerd → images → kubelet and kube-proxy).
// The holder owns the node's network and mount namespaces and does nothing
// else: kubelet and containerd must share one mount namespace that outlives
// containerd (a restarted containerd otherwise finds kubelet's projected
// volumes empty). Everything runs in the node's cgroup; `down` kills that.
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { stringify } from 'yaml';
import { makeCgroup } from './cgroups.ts';
import {
  cniConfig,
  GUARDED_SYSCTLS,
  kubeletConfig,
  kubeProxyConfig,
  mountScript,
  nodePaths,
} from './configs.ts';
import { renderContainerdConfig } from './containerd-config.ts';
import { REAL_NODE_LABEL, type RealNode, type RealNodesLayout } from './layout.ts';
import { ensureNodeNetwork } from './network.ts';
import { exeOf, launch, runningPid, waitFor } from './processes.ts';

const exec = promisify(execFile);

/** What a node runs, built by hack/build-controlplane.sh and hack/build-node-runtime.sh. */
export interface NodeBinaries {
  kubelet: string;
  kubeProxy: string;
  containerd: string;
  ctr: string;
  /** containerd finds its shim on PATH: the folder that holds containerd-shim-runc-v2. */
  runtimeDir: string;
  pause: string;
  /** The pause image's name, as containerd pins it for every pod's sandbox. */
  sandboxImage: string;
  /** OCI archives every node imports before kubelet starts (pause first: without it a pod never starts). */
  images: readonly string[];
}

/** A node's credentials, PEM: the cluster CA, and kubelet's and kube-proxy's kubeconfigs. */
export interface NodeCredentials {
  clusterCa: string;
  kubeletKubeconfig: string;
  proxyKubeconfig: string;
  servingCert: string;
  servingKey: string;
}

/** Writes every file the node runs from; the node's state (containerd's, kubelet's) is left as it is. */
export function writeNodeFiles(
  layout: RealNodesLayout,
  node: RealNode,
  bins: NodeBinaries,
  creds: NodeCredentials,
): void {
  const p = nodePaths(node);
  for (const d of [
    p.logs,
    p.pids,
    p.cniConfDir,
    p.cniIpamDir,
    p.sysctlDir,
    join(node.dir, 'pki'),
    join(node.dir, 'containerd'),
  ])
    mkdirSync(d, { recursive: true });
  for (const d of ['lib', 'log', 'tmp']) mkdirSync(join(p.var, d), { recursive: true });
  if (!existsSync(join(p.var, 'run'))) symlinkSync('/run', join(p.var, 'run'));
  for (const [key, value] of Object.entries(GUARDED_SYSCTLS))
    writeFileSync(join(p.sysctlDir, key.replace('/', '.')), `${value}\n`);
  writeFileSync(p.resolvConf, 'nameserver 127.0.0.1\n');
  writeFileSync(p.mountScript, mountScript(node, bins.pause), { mode: 0o755 });
  const caFile = join(node.dir, 'pki', 'ca.crt');
  writeFileSync(caFile, creds.clusterCa);
  writeFileSync(p.kubeletServingCert, creds.servingCert);
  writeFileSync(p.kubeletServingKey, creds.servingKey, { mode: 0o600 });
  writeFileSync(p.kubeletKubeconfig, creds.kubeletKubeconfig, { mode: 0o600 });
  writeFileSync(p.proxyKubeconfig, creds.proxyKubeconfig, { mode: 0o600 });
  writeFileSync(p.kubeletConfig, stringify(kubeletConfig(node, caFile)));
  writeFileSync(p.proxyConfig, stringify(kubeProxyConfig(node)));
  writeFileSync(
    join(p.cniConfDir, '10-nodewarden.conflist'),
    `${JSON.stringify(cniConfig(layout.cluster, node), null, 2)}\n`,
  );
  writeFileSync(
    p.containerdConfig,
    renderContainerdConfig({
      root: join(node.dir, 'containerd', 'root'),
      state: join(node.dir, 'containerd', 'state'),
      grpcAddress: p.containerdSocket,
      ttrpcAddress: `${p.containerdSocket}.ttrpc`,
      cniConfDir: p.cniConfDir,
      sandboxImage: bins.sandboxImage,
    }),
  );
}

/** Starts the node's processes that do not run; resolves once kubelet and kube-proxy were started. */
export async function startNode(layout: RealNodesLayout, node: RealNode, bins: NodeBinaries): Promise<void> {
  const p = nodePaths(node);
  const cgroup = `${node.cgroup}/node`;
  makeCgroup(cgroup);
  await ensureNodeNetwork(layout, node);
  const base = { cgroup, logs: p.logs, pids: p.pids };
  const pause = realpathSync(bins.pause);
  let holder = runningPid(p.pids, 'holder', pause);
  if (holder === undefined) {
    const pid = launch({
      ...base,
      name: 'holder',
      command: [
        'ip',
        'netns',
        'exec',
        node.netns,
        'unshare',
        '--mount',
        '--propagation',
        'private',
        '/bin/sh',
        p.mountScript,
      ],
    });
    // pause runs once the mount script is done: only then do the namespaces hold what the others need.
    await waitFor(`node ${node.name}'s namespaces`, () => exeOf(pid) === pause, {
      timeoutMs: 10_000,
      log: join(p.logs, 'holder.log'),
    });
    holder = pid;
  }
  const enter = ['nsenter', '-t', String(holder), '-m', '-n'];
  const env = { PATH: `${bins.runtimeDir}:${process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin'}` };
  if (runningPid(p.pids, 'containerd', realpathSync(bins.containerd)) === undefined) {
    launch({
      ...base,
      name: 'containerd',
      env,
      command: [...enter, bins.containerd, '--config', p.containerdConfig],
    });
  }
  // Not the socket file: it stays behind a killed containerd. An answer is what counts.
  const ctr = (...args: string[]) =>
    exec(bins.ctr, ['--address', p.containerdSocket, '--namespace', 'k8s.io', ...args]);
  await waitFor(
    `node ${node.name}'s containerd`,
    () =>
      ctr('version').then(
        () => true,
        () => false,
      ),
    {
      timeoutMs: 30_000,
      log: join(p.logs, 'containerd.log'),
    },
  );
  for (const image of bins.images) await ctr('images', 'import', '--all-platforms', image);
  if (runningPid(p.pids, 'kubelet', realpathSync(bins.kubelet)) === undefined) {
    launch({
      ...base,
      name: 'kubelet',
      env,
      command: [
        ...enter,
        bins.kubelet,
        `--config=${p.kubeletConfig}`,
        `--kubeconfig=${p.kubeletKubeconfig}`,
        `--hostname-override=${node.name}`,
        `--node-ip=${node.ip}`,
        `--node-labels=${nodeLabels(node)}`,
      ],
    });
  }
  if (runningPid(p.pids, 'kube-proxy', realpathSync(bins.kubeProxy)) === undefined) {
    launch({
      ...base,
      name: 'kube-proxy',
      env,
      command: [...enter, bins.kubeProxy, `--config=${p.proxyConfig}`],
    });
  }
}

/** The labels kubelet registers its Node with (it may set only these prefixes itself). */
export function nodeLabels(node: RealNode): string {
  return [`${REAL_NODE_LABEL}=true`, `nodewarden.dev/pool=${node.name.replace(/-\d+$/, '')}`].join(',');
}

/** Imports an image archive into one node's containerd, as kubelet sees images (namespace k8s.io). */
export async function importImage(node: RealNode, ctrBinary: string, archive: string): Promise<void> {
  await exec(ctrBinary, [
    '--address',
    nodePaths(node).containerdSocket,
    '--namespace',
    'k8s.io',
    'images',
    'import',
    '--all-platforms',
    archive,
  ]);
}

/** Removes the node's folder (its containerd state, logs, pods' volumes); the node must not run. */
export function removeNodeFiles(node: RealNode): void {
  rmSync(node.dir, { recursive: true, force: true });
}
