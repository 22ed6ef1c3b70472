// containerd's configuration for a real node, in the version-4 schema that
// `containerd config migrate` writes for containerd 2.x. Only what differs
// from containerd's defaults, each for a reason (docs/design/real-nodes.md):
// every path lives in the node's own folder, so nothing lands on the host.

export interface ContainerdConfigInputs {
  /** Persistent state: content store, snapshots, metadata. */
  root: string;
  /** Runtime state (sockets of shims, mounts of running tasks). */
  state: string;
  /** The gRPC socket kubelet (containerRuntimeEndpoint) and ctr talk to. */
  grpcAddress: string;
  /** The ttrpc socket shims publish events on. */
  ttrpcAddress: string;
  /** Where the node's CNI configuration is (one file: bridge, host-local, portmap). */
  cniConfDir: string;
  /** Where the CNI plugins are: Debian's containernetworking-plugins by default. */
  cniBinDirs?: readonly string[];
  /** Debian's runc (the shim would look for `runc` on PATH otherwise). */
  runc?: string;
  /** The image every pod's sandbox runs; must be imported before kubelet starts, or CRI pulls it. */
  sandboxImage: string;
}

export const DEBIAN_CNI_BIN_DIR = '/usr/lib/cni';
export const DEBIAN_RUNC = '/usr/sbin/runc';

/** The TOML text of the configuration. */
export function renderContainerdConfig(inputs: ContainerdConfigInputs): string {
  const s = tomlString;
  const list = (items: readonly string[]) => `[${items.map(s).join(', ')}]`;
  return `${[
    'version = 4',
    `root = ${s(inputs.root)}`,
    `state = ${s(inputs.state)}`,
    // None, said outright: `containerd config default` lists the host's /etc/containerd/conf.d/*.toml.
    'imports = []',
    '',
    '[plugins]',
    "  [plugins.'io.containerd.cri.v1.images'.pinned_images]",
    `    sandbox = ${s(inputs.sandboxImage)}`,
    '',
    "  [plugins.'io.containerd.cri.v1.runtime']",
    // These machines lack CAP_SYS_RESOURCE: runc fails to set the -998 the pause container asks for.
    '    restrict_oom_score_adj = true',
    '',
    "    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]",
    `      BinaryName = ${s(inputs.runc ?? DEBIAN_RUNC)}`,
    // PID 1 is no systemd here: kubelet runs with cgroupDriver cgroupfs, and they must agree.
    '      SystemdCgroup = false',
    '',
    "    [plugins.'io.containerd.cri.v1.runtime'.cni]",
    `      bin_dirs = ${list(inputs.cniBinDirs ?? [DEBIAN_CNI_BIN_DIR])}`,
    `      conf_dir = ${s(inputs.cniConfDir)}`,
    '',
    "  [plugins.'io.containerd.grpc.v1.cri']",
    '    disable_tcp_service = true',
    '',
    // Its default, /opt/containerd, is the host's.
    "  [plugins.'io.containerd.internal.v1.opt']",
    `    path = ${s(`${inputs.root}/opt`)}`,
    '',
    // No NRI plugins run on a node; enabled, it would serve a socket at /var/run/nri on the host.
    "  [plugins.'io.containerd.nri.v1.nri']",
    '    disable = true',
    '',
    "  [plugins.'io.containerd.server.v1.grpc']",
    `    address = ${s(inputs.grpcAddress)}`,
    '',
    "  [plugins.'io.containerd.server.v1.ttrpc']",
    `    address = ${s(inputs.ttrpcAddress)}`,
  ].join('\n')}\n`;
}

/** A TOML basic string: JSON's escapes are TOML's, for everything a path can hold. */
function tomlString(value: string): string {
  return JSON.stringify(value);
}
