// renderServices as the controller calls it: the anchor's services cases
// (every object, hostAliases, BMC credentials in hosts; a bad key refused),
// determinism, hosts followed, and problems instead of broken objects.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DEFAULT_JUMPHOST_IMAGE } from '../../../../src/api/service-images.ts';
import type { K8sObject } from '../../../../src/runtime/resources.ts';
import {
  CLUSTER_LABEL,
  COMPONENT_LABEL,
  DEFAULT_HAPROXY_IMAGE,
  renderServices,
  SERVICE_COMPONENTS,
  TEMPLATE_KEY,
  templateConfigMapNames,
} from '../../../../src/tenant/services/index.ts';
import { hostAliases } from '../../../../src/tenant/services/jumphost.ts';
import {
  claimedHost,
  find,
  fleet,
  haproxyCheck,
  secretFile,
  sshPublicKey,
  tenantCluster,
} from './fixtures.ts';

const KEYS = ['id_ed25519', 'id_rsa'];
// biome-ignore lint/suspicious/noExplicitAny: Kubernetes objects read field by field
type Any = any;
const spec = (o: K8sObject): Any => o.spec;

describe('renderServices: the anchor services case', () => {
  const alice = sshPublicKey('ed25519', undefined, 'alice@laptop');
  const tc = tenantCluster();
  tc.spec.services!.jumpHost!.sshAuthorizedKeys = [alice];
  const { objects, problems } = renderServices(tc, fleet(), {}, KEYS);

  it('creates every load balancer and jump host object, with no problem', () => {
    assert.deepEqual(problems, []);
    assert.deepEqual(
      objects.map((o) => `${o.kind}/${o.metadata?.name}`),
      [
        'ConfigMap/blue-jumphost',
        'Deployment/blue-controlplane-lb',
        'Deployment/blue-jumphost',
        'Deployment/blue-worker-lb',
        'Secret/blue-controlplane-lb',
        'Secret/blue-jumphost',
        'Secret/blue-worker-lb',
        'Service/blue-controlplane-lb',
        'Service/blue-jumphost',
        'Service/blue-worker-lb',
      ],
    );
  });

  it('puts everything in the cluster namespace, labelled with it and owned by it', () => {
    for (const o of objects) {
      assert.equal(o.metadata?.namespace, 'tenants');
      assert.equal(o.metadata?.labels?.[CLUSTER_LABEL], 'blue');
      assert.deepEqual(o.metadata?.ownerReferences, [
        {
          apiVersion: 'baremetal.nodewarden.dev/v1alpha1',
          kind: 'TenantCluster',
          name: 'blue',
          uid: tc.metadata.uid,
          controller: true,
        },
      ]);
    }
  });

  it("maps every host's name to its address in the jump host (hostAliases)", () => {
    const pod = spec(find(objects, 'Deployment', 'blue-jumphost')).template.spec;
    assert.deepEqual(
      pod.hostAliases,
      fleet().map((h) => ({ ip: h.ips['oam-ipv4'], hostnames: [h.name] })),
    );
  });

  it('gives hosts that share an address one alias naming them all (the API server keys aliases by ip)', () => {
    const entry = (name: string, ip: string) => ({ name, ip, bmc: {} }) as never;
    assert.deepEqual(
      hostAliases([entry('h1', '10.0.0.1'), entry('h2', '10.0.0.2'), entry('h3', '10.0.0.1')]),
      [
        { ip: '10.0.0.1', hostnames: ['h1', 'h3'] },
        { ip: '10.0.0.2', hostnames: ['h2'] },
      ],
    );
  });

  it('lists every host with its BMC address and credentials in hosts', () => {
    const hosts = JSON.parse(secretFile(find(objects, 'Secret', 'blue-jumphost'), 'hosts'));
    assert.deepEqual(
      hosts.map((h: Any) => [h.name, h.ip, h.bmc.address, h.bmc.system, h.bmc.username, h.bmc.password]),
      fleet().map((h) => [h.name, h.ips['oam-ipv4'], '198.18.0.1:8443', h.name, 'admin', `pw-${h.name}`]),
    );
  });

  it('writes one ssh_config Host per host, with every node key', () => {
    const cfg = secretFile(find(objects, 'Secret', 'blue-jumphost'), 'ssh_config');
    const entries = cfg.split(/\n(?=Host )/).slice(1);
    assert.deepEqual(
      entries.map((e) => e.split('\n')[0]),
      fleet().map((h) => `Host ${h.name}`),
    );
    for (const e of entries)
      assert.deepEqual(
        [...e.matchAll(/IdentityFile (\S+)/g)].map((m) => m[1]),
        KEYS.map((k) => `/etc/nodewarden/node-ssh-keys/${k}`),
      );
  });

  it('authorizes the given key and ships the host helper', () => {
    const cm = find(objects, 'ConfigMap', 'blue-jumphost').data as Record<string, string>;
    assert.equal(cm.authorized_keys, `${alice}\n`);
    assert.match(cm.host!, /GracefulRestart/);
  });

  it('mounts each file where its reader looks: the helper, ssh and sshd', () => {
    const pod = spec(find(objects, 'Deployment', 'blue-jumphost')).template.spec;
    const mounts = Object.fromEntries(pod.containers[0].volumeMounts.map((m: Any) => [m.name, m.mountPath]));
    const volumes = Object.fromEntries(pod.volumes.map((v: Any) => [v.name, v]));
    const cm = find(objects, 'ConfigMap', 'blue-jumphost').data as Record<string, string>;
    // The helper's default hosts file is in the projected volume, beside authorized_keys.
    const hostsPath = /NODEWARDEN_HOSTS", "([^"]+)"/.exec(cm.host!)![1]!;
    const projected = volumes[Object.keys(mounts).find((n) => hostsPath.startsWith(`${mounts[n]}/`))!];
    assert.deepEqual(
      projected.projected.sources.flatMap((s: Any) =>
        (s.secret ?? s.configMap).items.map((i: Any) => i.path),
      ),
      ['hosts', 'authorized_keys'],
    );
    assert.equal(`${mounts.jumphost}/hosts`, hostsPath);
    // ssh reads /etc/ssh/ssh_config.d/*.conf; the IdentityFiles are the mounted node keys Secret.
    assert.equal(mounts['ssh-config'], '/etc/ssh/ssh_config.d');
    assert.deepEqual(volumes['ssh-config'].secret.items, [{ key: 'ssh_config', path: 'nodewarden.conf' }]);
    assert.equal(mounts['node-ssh-keys'], '/etc/nodewarden/node-ssh-keys');
    assert.equal(volumes['node-ssh-keys'].secret.secretName, 'blue-node-keys');
    assert.equal(volumes['node-ssh-keys'].secret.defaultMode, 0o400);
    // `host` is on PATH, executable.
    assert.equal(mounts.helper, '/usr/local/sbin');
    assert.deepEqual(volumes.helper.configMap.items, [{ key: 'host', path: 'host', mode: 0o555 }]);
  });

  it('serves SSH on the jump host node port and the API on the control-plane one', () => {
    assert.deepEqual(spec(find(objects, 'Service', 'blue-jumphost')).ports, [
      { name: 'ssh', protocol: 'TCP', port: 22, targetPort: 22, nodePort: 30001 },
    ]);
    const cp = spec(find(objects, 'Service', 'blue-controlplane-lb'));
    assert.equal(cp.type, 'NodePort');
    assert.deepEqual(cp.ports, [
      { name: 'https', protocol: 'TCP', port: 6443, targetPort: 6443, nodePort: 30000 },
    ]);
  });

  it('gives the worker load balancer one Service port per node port, port = node port', () => {
    assert.deepEqual(
      spec(find(objects, 'Service', 'blue-worker-lb')).ports.map((p: Any) => [
        p.port,
        p.targetPort,
        p.nodePort,
      ]),
      [
        [30002, 30002, 30002],
        [30003, 30003, 30003],
        [30004, 30004, 30004],
      ],
    );
  });

  it('runs HAProxy on any node by default, with its config mounted where the image reads it', () => {
    const pod = spec(find(objects, 'Deployment', 'blue-controlplane-lb')).template.spec;
    assert.equal(pod.nodeSelector, undefined);
    assert.equal(pod.affinity, undefined);
    assert.deepEqual(
      pod.tolerations.map((t: Any) => t.key),
      ['node-role.kubernetes.io/control-plane', 'node-role.kubernetes.io/master'],
    );
    assert.equal(pod.containers[0].image, DEFAULT_HAPROXY_IMAGE);
    assert.deepEqual(pod.containers[0].volumeMounts[0].mountPath, '/usr/local/etc/haproxy');
    assert.equal(pod.volumes[0].secret.secretName, 'blue-controlplane-lb');
  });

  it('backs the control plane with every control-plane host (standby too) and the workers with every worker', () => {
    const cp = secretFile(find(objects, 'Secret', 'blue-controlplane-lb'), 'haproxy.cfg');
    const w = secretFile(find(objects, 'Secret', 'blue-worker-lb'), 'haproxy.cfg');
    const servers = (cfg: string) =>
      [...cfg.matchAll(/^\s*server (\S+) (\S+)/gm)].map((m) => `${m[1]} ${m[2]}`);
    assert.deepEqual(servers(cp), [
      'cp-0 192.168.10.10:6443',
      'cp-1 192.168.10.11:6443',
      'cp-2 192.168.10.12:6443',
    ]);
    assert.deepEqual(servers(w).slice(0, 2), ['w-0 192.168.10.20:30002', 'w-1 192.168.10.21:30002']);
    assert.equal(servers(w).length, 6);
    assert.ok(haproxyCheck(cp).valid);
    assert.ok(haproxyCheck(w).valid);
  });
});

describe('renderServices: problems', () => {
  it('refuses an invalid SSH key, naming which and why, and leaves the jump host out', () => {
    const tc = tenantCluster();
    const good = sshPublicKey('ed25519');
    tc.spec.services!.jumpHost!.sshAuthorizedKeys = [good, 'ssh-ed25519 AAAAnotakey bob@desk'];
    const { objects, problems } = renderServices(tc, fleet(), {}, KEYS);
    assert.equal(problems.length, 1);
    assert.equal(problems[0]!.service, 'jumpHost');
    assert.match(problems[0]!.message, /^sshAuthorizedKeys\[1\] \("ssh-ed25519 AAAAnotakey bob@desk"\) /);
    assert.match(problems[0]!.message, /not valid base64|cut short/);
    assert.equal(objects.filter((o) => o.metadata?.name === 'blue-jumphost').length, 0);
    assert.equal(objects.length, 6, 'both load balancers still rendered');
  });

  it('turns a bad template into a problem with its line, and keeps the other services', () => {
    const { objects, problems } = renderServices(
      tenantCluster(),
      fleet(),
      { controlPlane: 'frontend api\n  bind :{{ frontend_port }}\n' },
      KEYS,
    );
    assert.deepEqual(problems, [
      {
        service: 'controlPlaneLoadBalancer',
        message:
          'template: line 2: unknown variable frontend_port (here: backends, cluster, frontendPort, namespace)',
      },
    ]);
    assert.ok(!objects.some((o) => o.metadata?.name === 'blue-controlplane-lb'));
    assert.ok(objects.some((o) => o.metadata?.name === 'blue-worker-lb'));
  });

  it('uses a user template when given one', () => {
    const tpl =
      'global\ndefaults\n  mode tcp\n  timeout client 1s\n  timeout server 1s\n  timeout connect 1s\n{{#each ports}}\nlisten p{{port}}\n  bind :{{port}}\n{{/each}}\n';
    const { objects, problems } = renderServices(tenantCluster(), fleet(), { worker: tpl }, KEYS);
    assert.deepEqual(problems, []);
    const cfg = secretFile(find(objects, 'Secret', 'blue-worker-lb'), 'haproxy.cfg');
    assert.match(cfg, /^listen p30004$/m);
    assert.ok(haproxyCheck(cfg).valid);
  });

  it('says which host has no address on the interface', () => {
    const hosts = [...fleet(), claimedHost('cp-9', 'ControlPlane', '', { ips: { other: '10.9.9.9' } })];
    const { problems } = renderServices(tenantCluster(), hosts, {}, KEYS);
    assert.deepEqual(
      problems.map((p) => [p.service, p.message]),
      [
        ['controlPlaneLoadBalancer', 'host cp-9 has no address on interface oam-ipv4'],
        ['jumpHost', 'host cp-9 has no address on interface oam-ipv4'],
      ],
    );
  });

  it('needs the node keys Secret', () => {
    assert.match(renderServices(tenantCluster(), fleet(), {}, []).problems[0]!.message, /blue-node-keys/);
  });

  it('runs the jump host image built here (make service-images) when none is given', () => {
    const tc = tenantCluster();
    delete tc.spec.services!.jumpHost!.image;
    const { objects, problems } = renderServices(tc, fleet(), {}, KEYS);
    assert.deepEqual(problems, []);
    const pod = (find(objects, 'Deployment', 'blue-jumphost').spec as Any).template.spec;
    assert.equal(pod.containers[0].image, DEFAULT_JUMPHOST_IMAGE);
    assert.match(DEFAULT_JUMPHOST_IMAGE, /^localhost\/nodewarden-jumphost:\d+\.\d+\.\d+/);
  });

  it('refuses a worker port range that is empty or wider than the API allows', () => {
    for (const [start, end, why] of [
      [30010, 30002, /is empty/],
      [30000, 30256, /has 257 ports, more than 256/],
    ] as const) {
      const tc = tenantCluster({
        workerLoadBalancer: { nodePortRange: { start, end }, nodeInterfaceId: 'oam-ipv4' },
      });
      const { problems } = renderServices(tc, fleet(), {}, KEYS);
      assert.equal(problems.length, 1);
      assert.equal(problems[0]!.service, 'workerLoadBalancer');
      assert.match(problems[0]!.message, why);
    }
  });

  it('refuses a cluster name too long for its objects', () => {
    const tc = tenantCluster();
    tc.metadata.name = 'x'.repeat(55);
    const { objects, problems } = renderServices(tc, fleet(), {}, KEYS);
    assert.deepEqual(objects, []);
    assert.equal(problems.length, 3);
    assert.match(problems[0]!.message, /longer than 63 characters/);
  });

  it('renders nothing for services the spec does not ask for', () => {
    const tc = tenantCluster();
    tc.spec.services = {};
    assert.deepEqual(renderServices(tc, fleet()), { objects: [], problems: [] });
  });

  it('labels each service with the component the controller prunes by', () => {
    const { objects } = renderServices(tenantCluster(), fleet(), {}, KEYS);
    for (const [field, component] of Object.entries(SERVICE_COMPONENTS)) {
      const mine = objects.filter((o) => o.metadata?.labels?.[COMPONENT_LABEL] === component);
      assert.ok(mine.length >= 3, field);
      for (const o of mine) assert.equal(o.metadata?.name, `blue-${component}`);
    }
  });
});

describe('renderServices: services follow the hosts', () => {
  it('renders the same objects for the same hosts, whatever their order', () => {
    const a = renderServices(tenantCluster(), fleet(), {}, KEYS);
    const b = renderServices(tenantCluster(), fleet().reverse(), {}, [...KEYS].reverse());
    assert.deepEqual(b, a);
    assert.equal(JSON.stringify(b), JSON.stringify(a));
  });

  it('changes the backends, the config digest and the aliases when a host is replaced', () => {
    const before = renderServices(tenantCluster(), fleet(), {}, KEYS).objects;
    const replaced = fleet().map((h) =>
      h.name === 'cp-1' ? claimedHost('cp-7', 'ControlPlane', '192.168.10.17') : h,
    );
    const after = renderServices(tenantCluster(), replaced, {}, KEYS).objects;
    const cfg = (objs: K8sObject[]) =>
      secretFile(find(objs, 'Secret', 'blue-controlplane-lb'), 'haproxy.cfg');
    assert.match(cfg(before), /server cp-1 192\.168\.10\.11:6443/);
    assert.doesNotMatch(cfg(after), /cp-1/);
    assert.match(cfg(after), /server cp-7 192\.168\.10\.17:6443/);
    const hash = (objs: K8sObject[]) =>
      spec(find(objs, 'Deployment', 'blue-controlplane-lb')).template.metadata.annotations[
        'baremetal.nodewarden.dev/config-hash'
      ];
    assert.notEqual(hash(after), hash(before), 'a new config rolls the HAProxy pod');
    const aliases = (objs: K8sObject[]) =>
      spec(find(objs, 'Deployment', 'blue-jumphost')).template.spec.hostAliases.map(
        (a: Any) => a.hostnames[0],
      );
    assert.deepEqual(aliases(after), ['cp-0', 'cp-2', 'cp-7', 'w-0', 'w-1']);
    // The worker load balancer did not change: same bytes, no rollout.
    assert.deepEqual(
      find(after, 'Deployment', 'blue-worker-lb'),
      find(before, 'Deployment', 'blue-worker-lb'),
    );
  });

  it('names the template ConfigMaps the controller reads', () => {
    assert.deepEqual(templateConfigMapNames(tenantCluster()), {
      controlPlane: 'blue-controlplane-lb-template',
      worker: 'blue-worker-lb-template',
    });
    assert.equal(TEMPLATE_KEY, 'haproxy.cfg.tmpl');
  });
});

describe('where each service runs (spec.services.*.placement)', () => {
  const AFFINITY = {
    podAntiAffinity: {
      requiredDuringSchedulingIgnoredDuringExecution: [
        { topologyKey: 'kubernetes.io/hostname', labelSelector: { matchLabels: { app: 'x' } } },
      ],
    },
  };
  const DEFAULT_KEYS = ['node-role.kubernetes.io/control-plane', 'node-role.kubernetes.io/master'];
  const cases: {
    name: string;
    placement: Any;
    nodeSelector?: Record<string, string>;
    tolerations: string[];
    affinity?: object;
  }[] = [
    { name: 'none: any node, control-plane nodes too', placement: undefined, tolerations: DEFAULT_KEYS },
    { name: 'empty: the same defaults', placement: {}, tolerations: DEFAULT_KEYS },
    {
      name: "pinned to the control plane, as the anchor was: the defaults' tolerations stay",
      placement: { nodeSelector: { 'node-role.kubernetes.io/control-plane': '' } },
      nodeSelector: { 'node-role.kubernetes.io/control-plane': '' },
      tolerations: DEFAULT_KEYS,
    },
    {
      name: 'tolerations given replace the defaults; an empty list tolerates nothing',
      placement: { tolerations: [] },
      tolerations: [],
    },
    {
      name: "the user's own taint and an affinity, as written",
      placement: {
        tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'lb', effect: 'NoSchedule' }],
        affinity: AFFINITY,
      },
      tolerations: ['dedicated'],
      affinity: AFFINITY,
    },
    {
      name: 'an empty nodeSelector or affinity is left out',
      placement: { nodeSelector: {}, affinity: {} },
      tolerations: DEFAULT_KEYS,
    },
  ];
  for (const c of cases)
    it(c.name, () => {
      const placed = { placement: c.placement };
      const tc = tenantCluster({
        controlPlaneLoadBalancer: { nodePort: 30000, nodeInterfaceId: 'oam-ipv4', ...placed },
        workerLoadBalancer: {
          nodePortRange: { start: 30002, end: 30004 },
          nodeInterfaceId: 'oam-ipv4',
          ...placed,
        },
        jumpHost: { nodePort: 30001, nodeInterfaceId: 'oam-ipv4', nodeSSHPrivateKeys: 'k', ...placed },
      });
      const { objects, problems } = renderServices(tc, fleet(), {}, KEYS);
      assert.deepEqual(problems, []);
      for (const name of ['blue-controlplane-lb', 'blue-worker-lb', 'blue-jumphost']) {
        const pod = spec(find(objects, 'Deployment', name)).template.spec;
        assert.deepEqual(pod.nodeSelector, c.nodeSelector, name);
        assert.deepEqual(
          pod.tolerations.map((t: Any) => t.key),
          c.tolerations,
          name,
        );
        assert.deepEqual(pod.affinity, c.affinity, name);
      }
    });

  it('copies the placement, so editing one object never edits the spec or another', () => {
    const tc = tenantCluster({
      jumpHost: {
        nodePort: 30001,
        nodeInterfaceId: 'oam-ipv4',
        nodeSSHPrivateKeys: 'k',
        placement: { affinity: AFFINITY },
      },
    });
    const pod = spec(find(renderServices(tc, fleet(), {}, KEYS).objects, 'Deployment', 'blue-jumphost'))
      .template.spec;
    pod.affinity.podAntiAffinity = 'edited';
    assert.notEqual((tc.spec.services!.jumpHost!.placement!.affinity as Any).podAntiAffinity, 'edited');
  });
});
