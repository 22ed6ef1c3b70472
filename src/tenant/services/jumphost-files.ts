// The files the jump host serves its users: `hosts` (each host's address and
// BMC with credentials, JSON), `ssh_config` (one Host per machine, with every
// node key as an IdentityFile) and the `host` helper that lists the machines
// and reads or changes their power over Redfish with redfishtool (on, off,
// reboot, status), as the anchor's jump host does.
import {
  HELPER_DIR,
  JUMPHOST_DIR,
  JUMPHOST_FILES,
  NODE_KEYS_DIR,
  SSH_CONFIG_DIR,
} from '../../api/service-images.ts';
import type { BmcEndpoint } from './bmc-address.ts';

/** Where the pod finds them (see jumphost.ts for the mounts; the image's side is src/api/service-images.ts). */
export { HELPER_DIR, JUMPHOST_DIR, NODE_KEYS_DIR, SSH_CONFIG_DIR };

export interface JumpHostEntry {
  name: string;
  ip: string;
  bmc: BmcEndpoint & { username: string; password: string };
}

/** The hosts file: sorted by name, so the same hosts give the same bytes. */
export function hostsFile(entries: readonly JumpHostEntry[]): string {
  const sorted = [...entries].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return `${JSON.stringify(sorted, null, 2)}\n`;
}

export function sshConfig(
  title: string,
  entries: readonly JumpHostEntry[],
  keyNames: readonly string[],
): string {
  const keys = [...keyNames].sort().map((k) => `  IdentityFile ${NODE_KEYS_DIR}/${k}\n`);
  const hosts = [...entries]
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .map((e) => `\nHost ${e.name}\n  HostName ${e.ip}\n${keys.join('')}`);
  return `# ${title}: one entry per host, with every node key.\n${hosts.join('')}`;
}

/** The `host` helper. Python, as redfishtool itself is: an image that has redfishtool has python3. */
export const HOST_HELPER = `#!/usr/bin/env python3
"""host: the tenant cluster's machines, as this jump host knows them.

  host list           each machine: name, address, BMC
  host status NAME    its power state, as its BMC reports it (Redfish)
  host on NAME        power it on through its BMC
  host off NAME       shut it down gracefully through its BMC (--force: cut the power)
  host reboot NAME    restart it gracefully through its BMC
"""
import json
import os
import subprocess
import sys

HOSTS = os.environ.get("NODEWARDEN_HOSTS", "${JUMPHOST_FILES.hosts}")
RESETS = {"on": "On", "off": "GracefulShutdown", "off --force": "ForceOff", "reboot": "GracefulRestart"}
SAYS = {"on": "powering on", "off": "shutting down", "off --force": "powering off", "reboot": "restarting"}


def load():
    with open(HOSTS) as f:
        return json.load(f)


def list_hosts(hosts):
    rows = [("NAME", "ADDRESS", "BMC")]
    rows += [(h["name"], h["ip"], h["bmc"]["driver"] + "://" + h["bmc"]["address"]) for h in hosts]
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
    return 0


def redfish_bmc(hosts, name):
    match = [h for h in hosts if h["name"] == name]
    if not match:
        print("host: no machine " + name + " (see: host list)", file=sys.stderr)
        return None
    bmc = match[0]["bmc"]
    if not bmc.get("redfish") or not bmc.get("system"):
        print("host: " + name + "'s BMC (" + bmc["driver"] + ") does not speak Redfish with a System id", file=sys.stderr)
        return None
    return bmc


def redfishtool(bmc, *args):
    return [
        "redfishtool", "-r", bmc["address"], "-S", "Always" if bmc.get("tls") else "Never",
        "-u", bmc["username"], "-p", bmc["password"], "Systems", "-I", bmc["system"], *args,
    ]


def reset(hosts, name, action):
    bmc = redfish_bmc(hosts, name)
    if bmc is None:
        return 1
    print("host: " + SAYS[action] + " " + name + " through " + bmc["address"])
    return subprocess.call(redfishtool(bmc, "reset", RESETS[action]))


def status(hosts, name):
    bmc = redfish_bmc(hosts, name)
    if bmc is None:
        return 1
    got = subprocess.run(redfishtool(bmc, "get", "-P", "PowerState"), capture_output=True, text=True)
    if got.returncode != 0:
        sys.stderr.write(got.stderr or got.stdout)
        return got.returncode
    try:
        state = json.loads(got.stdout)["PowerState"]
    except (ValueError, KeyError, TypeError):
        print("host: " + name + "'s BMC answered without a PowerState: " + got.stdout.strip(), file=sys.stderr)
        return 1
    print(name + ": " + str(state))
    return 0


def main(args):
    if args == ["list"]:
        return list_hosts(load())
    if len(args) == 2 and args[0] == "status":
        return status(load(), args[1])
    action = " ".join(a for a in args[:1] + args[2:])
    if len(args) >= 2 and action in RESETS:
        return reset(load(), args[1], action)
    print(__doc__.strip(), file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
`;
