// The jump host's `host` helper, run by python3 as the jump host runs it,
// with a stand-in redfishtool that records how it was called (the real one
// against the simulated BMC fleet: test/integration/tenant-services.test.ts).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { bmcEndpoint } from '../../../../src/tenant/services/bmc-address.ts';
import { HOST_HELPER, hostsFile } from '../../../../src/tenant/services/jumphost-files.ts';

const dir = mkdtempSync(join(tmpdir(), 'host-helper-'));
after(() => rmSync(dir, { recursive: true, force: true }));
writeFileSync(join(dir, 'host'), HOST_HELPER);
// It answers a PowerState read as redfishtool -P does: a JSON object of that one property.
writeFileSync(
  join(dir, 'redfishtool'),
  `#!/bin/sh\nprintf '%s\\n' "$@" > "${dir}/redfishtool.args"\ncase "$*" in *PowerState*) echo "\${POWER:-}" ;; esac\n`,
);
chmodSync(join(dir, 'redfishtool'), 0o755);
const entry = (name: string, ip: string, address: string) => ({
  name,
  ip,
  bmc: { ...bmcEndpoint(address), username: 'admin', password: `pw ${name}` },
});
writeFileSync(
  join(dir, 'hosts'),
  hostsFile([
    entry('w-0', '192.168.10.20', 'redfish+http://10.0.0.20:8000/redfish/v1/Systems/sys-w0'),
    entry('cp-0', '192.168.10.10', 'redfish://[fd00::10]:8443/redfish/v1/Systems/sys-cp0'),
    entry('old-0', '192.168.10.30', 'ipmi://10.0.0.30:623'),
  ]),
);

function host(...args: string[]) {
  return hostAnswering('{"PowerState": "On"}', ...args);
}

function hostAnswering(power: string, ...args: string[]) {
  rmSync(join(dir, 'redfishtool.args'), { force: true });
  const r = spawnSync('python3', [join(dir, 'host'), ...args], {
    encoding: 'utf8',
    env: {
      ...process.env,
      PATH: `${dir}:${process.env.PATH}`,
      NODEWARDEN_HOSTS: join(dir, 'hosts'),
      POWER: power,
    },
  });
  let redfishtool: string[] | undefined;
  try {
    redfishtool = readFileSync(join(dir, 'redfishtool.args'), 'utf8').trimEnd().split('\n');
  } catch {}
  return { code: r.status, out: r.stdout, err: r.stderr, redfishtool };
}

describe('the jump host `host` helper', () => {
  it('lists every machine by name with its address and BMC', () => {
    const r = host('list');
    assert.equal(r.code, 0, r.err);
    assert.deepEqual(
      r.out
        .trimEnd()
        .split('\n')
        .map((l) => l.split(/\s+/)),
      [
        ['NAME', 'ADDRESS', 'BMC'],
        ['cp-0', '192.168.10.10', 'redfish://[fd00::10]:8443'],
        ['old-0', '192.168.10.30', 'ipmi://10.0.0.30:623'],
        ['w-0', '192.168.10.20', 'redfish://10.0.0.20:8000'],
      ],
    );
  });

  it('reboots a machine with a Redfish GracefulRestart of its System, over TLS unless the BMC is +http', () => {
    const tls = host('reboot', 'cp-0');
    assert.equal(tls.code, 0, tls.err);
    assert.deepEqual(tls.redfishtool, [
      '-r',
      '[fd00::10]:8443',
      '-S',
      'Always',
      '-u',
      'admin',
      '-p',
      'pw cp-0',
      'Systems',
      '-I',
      'sys-cp0',
      'reset',
      'GracefulRestart',
    ]);
    const plain = host('reboot', 'w-0');
    assert.deepEqual(plain.redfishtool?.slice(0, 4), ['-r', '10.0.0.20:8000', '-S', 'Never']);
  });

  it('powers a machine on, off gracefully, or off by force with the matching Redfish reset', () => {
    const reset = (...args: string[]) => {
      const r = host(...args);
      assert.equal(r.code, 0, r.err);
      return r.redfishtool?.slice(-5);
    };
    assert.deepEqual(reset('on', 'w-0'), ['Systems', '-I', 'sys-w0', 'reset', 'On']);
    assert.deepEqual(reset('off', 'w-0'), ['Systems', '-I', 'sys-w0', 'reset', 'GracefulShutdown']);
    assert.deepEqual(reset('off', 'w-0', '--force'), ['Systems', '-I', 'sys-w0', 'reset', 'ForceOff']);
    assert.match(host('off', 'w-0').out, /shutting down w-0 through 10\.0\.0\.20:8000/);
  });

  it("prints a machine's power state as its BMC reports it", () => {
    const on = host('status', 'cp-0');
    assert.equal(on.code, 0, on.err);
    assert.equal(on.out, 'cp-0: On\n');
    assert.deepEqual(on.redfishtool?.slice(-6), ['Systems', '-I', 'sys-cp0', 'get', '-P', 'PowerState']);
    assert.equal(hostAnswering('{"PowerState": "Off"}', 'status', 'w-0').out, 'w-0: Off\n');
    const garbled = hostAnswering('not json', 'status', 'w-0');
    assert.equal(garbled.code, 1);
    assert.match(garbled.err, /without a PowerState: not json/);
  });

  it('says so for a machine it does not know or cannot reach over Redfish, and calls nothing', () => {
    const unknown = host('reboot', 'nope');
    assert.equal(unknown.code, 1);
    assert.match(unknown.err, /no machine nope/);
    const ipmi = host('reboot', 'old-0');
    assert.equal(ipmi.code, 1);
    assert.match(ipmi.err, /does not speak Redfish/);
    assert.equal(ipmi.redfishtool, undefined);
    for (const verb of ['on', 'off', 'status']) {
      const r = host(verb, 'old-0');
      assert.equal(r.code, 1);
      assert.equal(r.redfishtool, undefined);
    }
  });

  it('prints its usage on anything else', () => {
    for (const args of [['reboot'], ['on', 'w-0', '--force'], ['status', 'w-0', 'x'], ['halt', 'w-0']]) {
      const r = host(...args);
      assert.equal(r.code, 2, args.join(' '));
      assert.match(r.err, /host on NAME[\s\S]*host reboot NAME/);
      assert.equal(r.redfishtool, undefined);
    }
  });
});
