// A libvirtd of a VM host's own, for hosts without one to lend (and for tests
// out of cluster): it runs in a network namespace made for the host
// (nw-vmh-<name>), so the bridges of the pool's networks and the VMs' NICs
// live there and nothing leaves it; in a mount namespace of its own (a copy of
// a real node's, when it stands for that node's libvirtd), so its state (/run,
// /var/lib, /etc of libvirt) sits in one folder and never meets the host's
// libvirt; with its sockets in that folder, which the agent on the
// host's loopback reaches (unix sockets cross network namespaces). Without
// systemd: virtlogd and libvirtd are started as plain daemons and stopped by
// their pid files. stop() leaves nothing: no domain, pool, network, process,
// namespace or folder.
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { runCommand } from './command.ts';
import { Virsh } from './virsh.ts';

/** The network namespace of a VM host. */
export const vmHostNetns = (name: string) => `nw-vmh-${name}`;

/** libvirt's folders on the host, each replaced by one of ours in the daemon's mount namespace. */
const LIBVIRT_DIRS = {
  run: '/run/libvirt',
  lib: '/var/lib/libvirt',
  log: '/var/log/libvirt',
  cache: '/var/cache/libvirt',
  etc: '/etc/libvirt',
} as const;

const TOOLS = ['libvirtd', 'virtlogd', 'virsh', 'qemu-system-x86_64', 'ip', 'nsenter', 'unshare'];

/** Why a private libvirtd cannot run here, or undefined when it can. */
export async function libvirtdMissing(): Promise<string | undefined> {
  if (process.getuid?.() !== 0) return 'a private libvirtd needs root (network and mount namespaces)';
  const absent: string[] = [];
  for (const t of TOOLS) await runCommand('sh', ['-c', `command -v ${t}`]).catch(() => absent.push(t));
  if (absent.length > 0)
    return `missing ${absent.join(', ')} (Debian: libvirt-daemon-system, libvirt-clients, qemu-system-x86)`;
  if (!existsSync('/etc/libvirt/qemu.conf')) return 'no /etc/libvirt/qemu.conf to start from';
  return undefined;
}

export interface PrivateLibvirtdOptions {
  /** The VM host's name: its namespace is nw-vmh-<name>. At most 15 characters with the prefix' room. */
  name: string;
  /** Where its state and sockets live; made, and removed by stop(). */
  dir: string;
  /**
   * A network namespace that exists already to run in — a local cluster's real
   * node's, so an agent in a pod on that node reaches it — neither made nor
   * removed here. Default: nw-vmh-<name>, made and removed.
   */
  netns?: string;
  /**
   * A process whose mount namespace to start from (a local cluster's real
   * node's): the file system a node's own libvirtd sees, where its pods'
   * hostPaths are, so the serial logs an agent names there are the same
   * files for both. Default: this process's.
   */
  mountsOf?: number;
}

export class PrivateLibvirtd {
  readonly name: string;
  readonly dir: string;
  readonly netns: string;
  /** Whether the namespace is its own (made at start, removed at stop). */
  private readonly ownsNetns: boolean;
  private readonly mountsOf: number | undefined;
  readonly uri: string;
  /** The folder of its sockets (an agent's --libvirt-uri names libvirt-sock in it). */
  readonly socketDir: string;
  readonly virsh: Virsh;

  private constructor(opts: PrivateLibvirtdOptions) {
    this.name = opts.name;
    this.dir = opts.dir;
    this.netns = opts.netns ?? vmHostNetns(opts.name);
    this.ownsNetns = opts.netns === undefined;
    this.mountsOf = opts.mountsOf;
    this.socketDir = join(opts.dir, 'sock');
    this.uri = `qemu:///system?socket=${join(this.socketDir, 'libvirt-sock')}`;
    this.virsh = new Virsh(this.uri);
  }

  /** Makes the namespace and the folder, starts virtlogd and libvirtd there, and waits until libvirtd answers. */
  static async start(opts: PrivateLibvirtdOptions): Promise<PrivateLibvirtd> {
    const d = new PrivateLibvirtd(opts);
    d.prepareDir();
    if (d.ownsNetns) await runCommand('ip', ['netns', 'add', d.netns]);
    try {
      await runCommand('nsenter', [
        `--net=/run/netns/${d.netns}`,
        ...(d.mountsOf === undefined ? [] : [`--mount=/proc/${d.mountsOf}/ns/mnt`]),
        'unshare',
        '--mount',
        '--propagation',
        'private',
        'sh',
        '-ec',
        d.startScript(),
      ]);
      await d.waitReady();
    } catch (err) {
      await d.stop();
      throw err;
    }
    return d;
  }

  /** Our copies of libvirt's folders, with a config that keeps everything inside them. */
  private prepareDir(): void {
    for (const sub of [...Object.keys(LIBVIRT_DIRS), 'sock'])
      mkdirSync(join(this.dir, sub), { recursive: true, mode: 0o700 });
    // The host's configuration as Debian ships it, less what would start by itself.
    const etc = join(this.dir, 'etc');
    const copy = (from: string, to: string) => writeFileSync(to, readFileSync(from));
    for (const f of ['libvirt.conf', 'virtlogd.conf', 'qemu.conf'])
      if (existsSync(join(LIBVIRT_DIRS.etc, f))) copy(join(LIBVIRT_DIRS.etc, f), join(etc, f));
    writeFileSync(
      join(etc, 'libvirtd.conf'),
      [
        `unix_sock_dir = "${join(this.dir, 'sock')}"`,
        'unix_sock_rw_perms = "0700"',
        'auth_unix_rw = "none"',
        'auth_unix_ro = "none"',
        '',
      ].join('\n'),
    );
    // QEMU as root with no security driver: the guest files are ours, in our folder.
    writeFileSync(
      join(etc, 'qemu.conf'),
      ['user = "root"', 'group = "root"', 'security_driver = "none"', ''].join('\n'),
    );
  }

  private startScript(): string {
    const binds = Object.entries(LIBVIRT_DIRS).map(
      ([sub, at]) => `mkdir -p ${at} && mount --bind ${join(this.dir, sub)} ${at}`,
    );
    return [
      ...binds,
      'ip link set lo up',
      `virtlogd -d -p ${join(this.dir, 'virtlogd.pid')}`,
      `libvirtd -d -f /etc/libvirt/libvirtd.conf -p ${join(this.dir, 'libvirtd.pid')}`,
    ].join('\n');
  }

  private async waitReady(): Promise<void> {
    let last: unknown;
    for (let i = 0; i < 100; i++) {
      try {
        await this.virsh.run(['version']);
        return;
      } catch (err) {
        last = err;
        await sleep(100);
      }
    }
    throw new Error(`libvirtd in ${this.netns} did not answer in 10 s: ${String(last)}`);
  }

  /** Stops every domain, then the daemons; removes the namespace and the folder. Safe to call twice. */
  async stop(): Promise<void> {
    if (existsSync(join(this.dir, 'libvirtd.pid'))) {
      // QEMU outlives libvirtd: its guests go first.
      const names = await this.virsh.domains().catch(() => []);
      for (const n of names) await this.virsh.run(['destroy', n]).catch(() => undefined);
    }
    for (const daemon of ['libvirtd', 'virtlogd']) await this.killByPidFile(`${daemon}.pid`);
    if (this.ownsNetns) await runCommand('ip', ['netns', 'delete', this.netns]).catch(() => undefined);
    rmSync(this.dir, { recursive: true, force: true });
  }

  private async killByPidFile(file: string): Promise<void> {
    const path = join(this.dir, file);
    if (!existsSync(path)) return;
    const pid = Number(readFileSync(path, 'utf8').trim());
    if (!Number.isInteger(pid) || pid <= 0) return;
    try {
      process.kill(pid, 'SIGTERM');
    } catch {
      return;
    }
    for (let i = 0; i < 50 && alive(pid); i++) await sleep(100);
    if (alive(pid)) process.kill(pid, 'SIGKILL');
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Network namespaces of VM hosts on this machine (what a leak check lists). */
export function vmHostNamespaces(): string[] {
  if (!existsSync('/run/netns')) return [];
  return readdirSync('/run/netns').filter((n) => n.startsWith('nw-vmh-'));
}
