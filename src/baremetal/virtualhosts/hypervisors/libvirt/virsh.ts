// libvirt through `virsh -c <uri>` (Debian's libvirt-clients): the client
// libvirt's own project keeps, which follows every daemon version and its
// access rules. Not a TypeScript reimplementation of libvirt's RPC (XDR over
// the socket, with its program numbers and keepalives): that would be a second
// client for us to keep in step with libvirt, for calls that happen once per
// VM and per power action, where a process per call costs nothing that shows.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CommandError, runCommand } from './command.ts';

/** A domain's state as `virsh domstate` prints it. */
export type DomainState =
  | 'running'
  | 'idle'
  | 'paused'
  | 'in shutdown'
  | 'shut off'
  | 'crashed'
  | 'pmsuspended'
  | 'no state';

export class Virsh {
  readonly uri: string;
  constructor(uri: string) {
    this.uri = uri;
  }

  /** `virsh -c <uri> args…`: its output, or a CommandError. */
  run(args: readonly string[]): Promise<string> {
    return runCommand('virsh', ['-q', '-c', this.uri, ...args]);
  }

  /** Runs a command that takes an XML file, with `xml` in a file of ours for its duration. */
  private async withXml(xml: string, args: (file: string) => string[]): Promise<string> {
    const dir = mkdtempSync(join(tmpdir(), 'nw-virsh-'));
    try {
      const file = join(dir, 'in.xml');
      writeFileSync(file, xml, { mode: 0o600 });
      return await this.run(args(file));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }

  // ------------------------------------------------------------ domains

  /** Every domain's name, running or not. */
  async domains(): Promise<string[]> {
    return lines(await this.run(['list', '--all', '--name']));
  }

  /** Every domain's state by name, in one call. */
  async domainStates(): Promise<Map<string, DomainState>> {
    const out = new Map<string, DomainState>();
    // `list --all` prints "Id Name State" rows ("-" for the Id of one switched off); names have no spaces.
    for (const row of lines(await this.run(['list', '--all']))) {
      const m = row.match(/^(\S+)\s+(\S+)\s+(.+)$/);
      if (m) out.set(m[2]!, m[3]!.trim() as DomainState);
    }
    return out;
  }

  async defineDomain(xml: string): Promise<void> {
    await this.withXml(xml, (f) => ['define', f]);
  }

  /** The domain's XML: as defined (inactive), or as it runs. Undefined when there is no such domain. */
  async domainXml(name: string, inactive = true): Promise<string | undefined> {
    try {
      return await this.run(['dumpxml', ...(inactive ? ['--inactive'] : []), name]);
    } catch (err) {
      if (isNoDomain(err)) return undefined;
      throw err;
    }
  }

  async domainState(name: string): Promise<DomainState | undefined> {
    try {
      return (await this.run(['domstate', name])).trim() as DomainState;
    } catch (err) {
      if (isNoDomain(err)) return undefined;
      throw err;
    }
  }

  start(name: string): Promise<string> {
    return this.run(['start', name]);
  }
  destroy(name: string): Promise<string> {
    return this.run(['destroy', name]);
  }
  shutdown(name: string): Promise<string> {
    return this.run(['shutdown', name]);
  }
  reset(name: string): Promise<string> {
    return this.run(['reset', name]);
  }

  /** Stops the domain if it runs and undefines it; none there is no error. */
  async undefine(name: string): Promise<void> {
    const state = await this.domainState(name);
    if (state === undefined) return;
    if (state !== 'shut off') await this.destroy(name).catch(() => undefined);
    await this.run(['undefine', name]).catch((err: unknown) => {
      if (!isNoDomain(err)) throw err;
    });
  }

  /** Puts `source` in the domain's CD drive `target` (e.g. hdc), or empties it; in the running domain too when it runs. */
  async changeMedia(name: string, target: string, source: string | undefined): Promise<void> {
    const running = (await this.domainState(name)) === 'running';
    const scope = running ? ['--live', '--config'] : ['--config'];
    const what = source ? ['--source', source, '--update', '--force'] : ['--eject', '--force'];
    await this.run(['change-media', name, target, ...what, ...scope]);
  }

  // ------------------------------------------------------ storage pools

  /** A directory pool at `path`, defined, built and started if it is not. */
  async ensureDirPool(name: string, path: string): Promise<void> {
    const have = lines(await this.run(['pool-list', '--all', '--name']));
    if (!have.includes(name)) {
      await this.run(['pool-define-as', name, 'dir', '--target', path]);
      await this.run(['pool-build', name]);
    }
    const active = lines(await this.run(['pool-list', '--name']));
    if (!active.includes(name)) await this.run(['pool-start', name]);
  }

  /** Names of the pool's volumes (as libvirt made them: the pool is ours, nobody adds files behind its back). */
  async volumes(pool: string): Promise<string[]> {
    return lines(await this.run(['vol-list', pool])).map((l) => l.split(/\s+/)[0]!);
  }

  /** The volume's file, or undefined when the pool has no such volume. */
  async volumePath(pool: string, name: string): Promise<string | undefined> {
    try {
      return (await this.run(['vol-path', '--pool', pool, name])).trim();
    } catch (err) {
      if (isNoVolume(err)) return undefined;
      throw err;
    }
  }

  /** A sparse qcow2 volume of `sizeGB`; one there already is kept. */
  async ensureVolume(pool: string, name: string, sizeGB: number): Promise<string> {
    const have = await this.volumePath(pool, name);
    if (have) return have;
    await this.run(['vol-create-as', pool, name, `${sizeGB}G`, '--format', 'qcow2']);
    return (await this.volumePath(pool, name))!;
  }

  /** A raw volume holding a copy of `file` (an ISO); made anew each time. */
  async uploadVolume(pool: string, name: string, file: string, bytes: number): Promise<string> {
    await this.deleteVolume(pool, name);
    await this.run(['vol-create-as', pool, name, String(bytes), '--format', 'raw']);
    await this.run(['vol-upload', '--pool', pool, name, file]);
    return (await this.volumePath(pool, name))!;
  }

  /** Deletes the volume; none there is no error. */
  async deleteVolume(pool: string, name: string): Promise<void> {
    await this.run(['vol-delete', '--pool', pool, name]).catch((err: unknown) => {
      if (!isNoVolume(err)) throw err;
    });
  }

  // ----------------------------------------------------------- networks

  /** An isolated network (no address, no DHCP: the pool's IPAM gives addresses) on `bridge`, started. */
  async ensureNetwork(name: string, bridge: string): Promise<void> {
    const have = lines(await this.run(['net-list', '--all', '--name']));
    if (!have.includes(name))
      await this.withXml(
        `<network><name>${name}</name><bridge name='${bridge}' stp='off'/></network>`,
        (f) => ['net-define', f],
      );
    const active = lines(await this.run(['net-list', '--name']));
    if (!active.includes(name)) await this.run(['net-start', name]);
  }

  async networks(): Promise<string[]> {
    return lines(await this.run(['net-list', '--all', '--name']));
  }

  // ------------------------------------------------------------ the host

  /** `virsh domcapabilities --virttype <type>`: undefined when libvirt says this host cannot. */
  async domainCapabilities(virttype: 'kvm' | 'qemu'): Promise<string | undefined> {
    return this.run(['domcapabilities', '--virttype', virttype]).catch(() => undefined);
  }
}

function lines(out: string): string[] {
  return out
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
}

/** libvirt's "Storage volume not found" (VIR_ERR_NO_STORAGE_VOL). */
export function isNoVolume(err: unknown): boolean {
  return err instanceof CommandError && /Storage volume not found|no storage vol/i.test(err.stderr);
}

/** libvirt's "Domain not found" (VIR_ERR_NO_DOMAIN). */
export function isNoDomain(err: unknown): boolean {
  return err instanceof CommandError && /failed to get domain|Domain not found/i.test(err.stderr);
}
