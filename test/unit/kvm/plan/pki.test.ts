import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  apiServerSans,
  type DesiredCertificate,
  desiredCertificates,
  type HeldCertificate,
  LEAF_LIFETIME_MS,
  planPki,
  renewalAt,
  serviceAddress,
} from '../../../../src/kvm/plan/pki.ts';
import { kvmCluster } from '../fixtures.ts';

const DAY = 24 * 3600 * 1000;
const T0 = Date.parse('2026-01-01T00:00:00Z');

describe('desiredCertificates: what a cluster needs', () => {
  const kc = kvmCluster({ name: 'c1', masters: 3, workers: 2 });
  const certs = desiredCertificates('c1', kc.spec);
  const byName = new Map(certs.map((c) => [c.name, c]));

  it('the control plane certificates, and etcd server and peer per master', () => {
    assert.deepEqual(
      certs.map((c) => c.name),
      [
        'apiserver',
        'apiserver-kubelet-client',
        'apiserver-etcd-client',
        'etcd-server-m1',
        'etcd-peer-m1',
        'etcd-server-m2',
        'etcd-peer-m2',
        'etcd-server-m3',
        'etcd-peer-m3',
        'controller-manager',
        'scheduler',
        'admin',
      ],
    );
  });

  it('workers add no certificate: kubelets bootstrap their own through the CSR API', () => {
    const more = desiredCertificates('c1', kvmCluster({ name: 'c1', masters: 3, workers: 7 }).spec);
    assert.deepEqual(
      more.map((c) => c.name),
      certs.map((c) => c.name),
    );
  });

  const table: Array<[string, Partial<DesiredCertificate>]> = [
    ['apiserver', { issuer: 'ca', commonName: 'kube-apiserver', organizations: [], usages: ['serverAuth'] }],
    [
      'apiserver-kubelet-client',
      {
        issuer: 'ca',
        commonName: 'kube-apiserver-kubelet-client',
        organizations: ['system:masters'],
        usages: ['clientAuth'],
      },
    ],
    [
      'apiserver-etcd-client',
      { issuer: 'etcd-ca', commonName: 'kube-apiserver-etcd-client', usages: ['clientAuth'] },
    ],
    [
      'etcd-server-m2',
      { issuer: 'etcd-ca', commonName: 'm2', usages: ['serverAuth', 'clientAuth'], master: 'm2' },
    ],
    [
      'etcd-peer-m2',
      { issuer: 'etcd-ca', commonName: 'm2', usages: ['serverAuth', 'clientAuth'], master: 'm2' },
    ],
    ['controller-manager', { issuer: 'ca', commonName: 'system:kube-controller-manager', organizations: [] }],
    ['scheduler', { issuer: 'ca', commonName: 'system:kube-scheduler', organizations: [] }],
    ['admin', { issuer: 'ca', commonName: 'nodewarden-admin', organizations: ['system:masters'] }],
  ];
  for (const [name, want] of table) {
    it(`${name}: ${want.commonName} from ${want.issuer}`, () => {
      const c = byName.get(name);
      assert.ok(c, name);
      for (const [k, v] of Object.entries(want))
        assert.deepEqual(c[k as keyof DesiredCertificate], v, `${name}.${k}`);
    });
  }

  it("only etcd's own CA signs what etcd trusts: no cluster-CA certificate (a kubelet's) opens etcd", () => {
    for (const c of certs) {
      const etcd = c.name.startsWith('etcd-') || c.name === 'apiserver-etcd-client';
      assert.equal(c.issuer, etcd ? 'etcd-ca' : 'ca', c.name);
    }
  });

  it('etcd names: localhost, the master Service', () => {
    assert.deepEqual(byName.get('etcd-server-m1')?.dnsNames, [
      'localhost',
      'master.c1.svc',
      'master.c1.svc.cluster.local',
    ]);
    assert.deepEqual(byName.get('etcd-server-m1')?.ipAddresses, ['127.0.0.1']);
  });
});

describe('apiServerSans: the names the API server answers to', () => {
  const table: Array<{ name: string; serviceCIDR?: string; domain: string; ip: string }> = [
    { name: 'default Service range (kubeadm 10.96.0.0/12)', domain: 'api.c1.example.com', ip: '10.96.0.1' },
    {
      name: "the spec's range",
      serviceCIDR: '172.31.0.0/16',
      domain: 'api.c1.example.com',
      ip: '172.31.0.1',
    },
    {
      name: 'a range given by a host address',
      serviceCIDR: '10.100.7.9/24',
      domain: 'k.example',
      ip: '10.100.7.1',
    },
  ];
  for (const t of table) {
    it(`${t.name}: ${t.ip} and ${t.domain}`, () => {
      const kc = kvmCluster({
        name: 'c1',
        spec: {
          api: { domain: t.domain },
          network: { vni: 7, ...(t.serviceCIDR ? { serviceCIDR: t.serviceCIDR } : {}) },
        },
      });
      const sans = apiServerSans('c1', kc.spec);
      assert.deepEqual(sans.ips, [t.ip, '127.0.0.1']);
      assert.deepEqual(sans.dns, [
        t.domain,
        'master.c1.svc',
        'master.c1.svc.cluster.local',
        'kubernetes',
        'kubernetes.default',
        'kubernetes.default.svc',
        'kubernetes.default.svc.cluster.local',
        'localhost',
      ]);
    });
  }

  it('serviceAddress: the 1st and 10th addresses (API and DNS Service IPs)', () => {
    assert.equal(serviceAddress('10.96.0.0/12', 1), '10.96.0.1');
    assert.equal(serviceAddress('10.96.0.0/12', 10), '10.96.0.10');
    assert.equal(serviceAddress('192.168.255.0/23', 1), '192.168.254.1');
  });
});

/** A held certificate as the desired one wants it, issued at `from` for a year. */
function held(want: DesiredCertificate, from = T0, over: Partial<HeldCertificate> = {}): HeldCertificate {
  return {
    name: want.name,
    commonName: want.commonName,
    organizations: [...want.organizations],
    dnsNames: [...want.dnsNames].reverse(), // order does not matter
    ipAddresses: [...want.ipAddresses],
    notBefore: from,
    notAfter: from + LEAF_LIFETIME_MS,
    issuedBy: want.issuer,
    ...over,
  };
}

describe('planPki: what to issue, and when to look again', () => {
  const kc = kvmCluster({ name: 'c1', masters: 1, workers: 1 });
  const desired = desiredCertificates('c1', kc.spec);
  const cas = {
    ca: { notBefore: T0, notAfter: T0 + 3650 * DAY },
    'etcd-ca': { notBefore: T0, notAfter: T0 + 3650 * DAY },
  };
  const all = desired.map((d) => held(d));
  const apiserver = desired[0] as DesiredCertificate;

  const table: Array<{
    name: string;
    cas?: typeof cas | Partial<typeof cas>;
    held: HeldCertificate[];
    now: number;
    issueCas: string[];
    issue: Array<[string, string]>;
    drop?: string[];
  }> = [
    {
      name: 'nothing held: both CAs and every certificate',
      cas: {},
      held: [],
      now: T0,
      issueCas: ['ca:missing', 'etcd-ca:missing'],
      issue: desired.map((d) => [d.name, 'otherCa']),
    },
    { name: 'all fresh: nothing', held: all, now: T0 + DAY, issueCas: [], issue: [] },
    {
      name: 'one missing',
      held: all.filter((h) => h.name !== 'scheduler'),
      now: T0 + DAY,
      issueCas: [],
      issue: [['scheduler', 'missing']],
    },
    {
      name: 'just before two thirds of its life: kept',
      held: all,
      now: renewalAt(all[0] as HeldCertificate) - 1,
      issueCas: [],
      issue: [],
    },
    {
      name: 'at two thirds of its life (~122 days before expiry): renewed',
      held: all,
      now: renewalAt(all[0] as HeldCertificate),
      issueCas: [],
      issue: desired.map((d) => [d.name, 'renewal']),
    },
    {
      name: 'expired (an operator that was down for a year): issued as expired',
      held: all,
      now: T0 + LEAF_LIFETIME_MS + DAY,
      issueCas: [],
      issue: desired.map((d) => [d.name, 'expired']),
    },
    {
      name: 'a renewed one beside the rest: only the old one',
      held: all.map((h) =>
        h.name === 'admin' ? h : { ...h, notBefore: T0 + 200 * DAY, notAfter: T0 + 565 * DAY },
      ),
      now: T0 + 250 * DAY,
      issueCas: [],
      issue: [['admin', 'renewal']],
    },
    {
      name: "the API domain changed: the apiserver's SANs",
      held: all.map((h) => (h.name === 'apiserver' ? { ...h, dnsNames: h.dnsNames.slice(1) } : h)),
      now: T0 + DAY,
      issueCas: [],
      issue: [['apiserver', 'subjectChanged']],
    },
    {
      name: 'a group changed',
      held: all.map((h) => (h.name === 'admin' ? { ...h, organizations: [] } : h)),
      now: T0 + DAY,
      issueCas: [],
      issue: [['admin', 'subjectChanged']],
    },
    {
      name: 'signed by no CA held (the CA Secret was replaced)',
      held: all.map((h) => (h.name === 'apiserver' ? { ...h, issuedBy: undefined } : h)) as HeldCertificate[],
      now: T0 + DAY,
      issueCas: [],
      issue: [['apiserver', 'otherCa']],
    },
    {
      name: 'an etcd certificate signed by the cluster CA',
      held: all.map((h) => (h.name === 'etcd-server-m1' ? { ...h, issuedBy: 'ca' as const } : h)),
      now: T0 + DAY,
      issueCas: [],
      issue: [['etcd-server-m1', 'otherCa']],
    },
    {
      name: 'the etcd CA due: it and only what it signs',
      cas: { ...cas, 'etcd-ca': { notBefore: T0 - 3000 * DAY, notAfter: T0 + 600 * DAY } },
      held: all,
      now: T0 + DAY,
      issueCas: ['etcd-ca:renewal'],
      issue: desired.filter((d) => d.issuer === 'etcd-ca').map((d) => [d.name, 'otherCa']),
    },
    {
      name: "a removed master's etcd certificates are dropped",
      held: [
        ...all,
        held({ ...apiserver, name: 'etcd-server-m9' }),
        held({ ...apiserver, name: 'etcd-peer-m9' }),
      ],
      now: T0 + DAY,
      issueCas: [],
      issue: [],
      drop: ['etcd-server-m9', 'etcd-peer-m9'],
    },
  ];
  for (const t of table) {
    it(t.name, () => {
      const plan = planPki({ desired, cas: t.cas ?? cas, held: t.held, now: t.now });
      assert.deepEqual(
        plan.issueCas.map((c) => `${c.name}:${c.cause}`),
        t.issueCas,
      );
      assert.deepEqual(
        plan.issue.map((i) => [i.name, i.cause]),
        t.issue,
      );
      assert.deepEqual(plan.drop, t.drop ?? []);
    });
  }

  it('looks again when the first held certificate falls due', () => {
    const early = all.map((h) =>
      h.name === 'scheduler' ? { ...h, notBefore: T0 - 30 * DAY, notAfter: T0 + 335 * DAY } : h,
    );
    const plan = planPki({ desired, cas, held: early, now: T0 + DAY });
    assert.deepEqual(plan.issue, []);
    assert.equal(plan.nextRenewalAt, renewalAt({ notBefore: T0 - 30 * DAY, notAfter: T0 + 335 * DAY }));
    assert.ok((plan.nextRenewalAt ?? 0) < renewalAt(all[0] as HeldCertificate));
  });

  it('a one-year certificate renews about 122 days before it expires', () => {
    const h = all[0] as HeldCertificate;
    const daysLeft = (h.notAfter - renewalAt(h)) / DAY;
    assert.ok(daysLeft > 121 && daysLeft < 123, String(daysLeft));
  });
});
