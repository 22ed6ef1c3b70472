// A workload cluster's PKI, decided as pure functions: which certificates the
// cluster needs (their subjects, SANs and usages, from its spec), and which of
// those held in the management cluster must be issued now — missing, for
// another subject or SANs, signed by another CA, or into the last third of
// their life (cert-manager's default renewal point) — and when to look again.
// Keys and signatures are made in act/pki.ts; nothing here is random.
//
// Kubelets get no certificate from here: a kubelet registers under its VM
// pod's name, which no one knows when the Ignition is rendered (one config per
// node, a new pod name per VM). Each kubelet bootstraps instead (TLS
// bootstrapping with the cluster's bootstrap token) and its own client
// certificate is signed by this CA in the workload cluster's controller-manager.
import type { KVMClusterSpecType } from '../../api/kvm.ts';
import { clusterNodes } from './spec.ts';

/** The CA lives ten years; a leaf one. */
export const CA_LIFETIME_MS = 10 * 365 * 24 * 3600 * 1000;
export const LEAF_LIFETIME_MS = 365 * 24 * 3600 * 1000;
/** Issued again once this share of its life has passed (cert-manager's default renewBefore, 1/3). */
export const RENEW_AT_FRACTION = 2 / 3;
/** Backdated so a node whose clock runs a little behind still accepts a fresh certificate. */
export const BACKDATE_MS = 5 * 60 * 1000;

/** kubeadm's default Service range; the workload API server's Service IP is its first address. */
export const DEFAULT_SERVICE_CIDR = '10.96.0.0/12';
/** The management and workload clusters' DNS domain (the kubelet's and CoreDNS's default). */
export const CLUSTER_DOMAIN = 'cluster.local';

export type ExtUsage = 'serverAuth' | 'clientAuth';

/**
 * Two CAs, as kubeadm keeps them: etcd trusts only its own, so no certificate
 * the cluster CA signs (every kubelet's, through the CSR API) opens etcd.
 */
export type CaName = 'ca' | 'etcd-ca';
export const CA_NAMES: readonly CaName[] = ['ca', 'etcd-ca'];

export interface DesiredCertificate {
  /** Its key in the certificates Secret (<name>.crt, <name>.key) and on the node. */
  name: string;
  issuer: CaName;
  commonName: string;
  organizations: string[];
  dnsNames: string[];
  ipAddresses: string[];
  usages: ExtUsage[];
  /** Only this master carries it (etcd's own); undefined: every master does. */
  master?: string;
}

/** What a held certificate says, as read from its PEM. */
export interface HeldCertificate {
  name: string;
  commonName: string;
  organizations: string[];
  dnsNames: string[];
  ipAddresses: string[];
  notBefore: number;
  notAfter: number;
  /** The held CA that signed it, if any. */
  issuedBy?: CaName;
}

export type IssueCause = 'missing' | 'subjectChanged' | 'otherCa' | 'renewal' | 'expired';

export interface PkiPlan {
  /** CAs to issue (and every certificate under them): none is held, or it is due. */
  issueCas: Array<{ name: CaName; cause: IssueCause }>;
  issue: Array<{ name: string; cause: IssueCause }>;
  /** Certificates held that the cluster no longer needs (a master removed). */
  drop: string[];
  /** The earliest time one of the held certificates falls due (ms); the reconciler looks again then. */
  nextRenewalAt?: number;
}

/**
 * The n-th address of a CIDR: 1 is the workload's `kubernetes` Service IP,
 * 10 its DNS Service's (kubeadm's choices).
 */
export function serviceAddress(cidr: string, n: number): string {
  const [ip = '', bits = '32'] = cidr.split('/');
  const base = ip.split('.').reduce((acc, o) => acc * 256 + Number(o), 0);
  const mask = Number(bits) === 0 ? 0 : (0xffffffff << (32 - Number(bits))) >>> 0;
  const at = ((base & mask) >>> 0) + n;
  return [24, 16, 8, 0].map((s) => (at >>> s) & 255).join('.');
}

/** The master Service's DNS names, through which nodes and the operator reach the API server and etcd. */
export function masterServiceNames(cluster: string): string[] {
  return [`master.${cluster}.svc`, `master.${cluster}.svc.${CLUSTER_DOMAIN}`];
}

/** The API server's certificate names: its domain, the master Service, the workload's own Service names. */
export function apiServerSans(cluster: string, spec: KVMClusterSpecType): { dns: string[]; ips: string[] } {
  const inCluster = ['kubernetes', 'kubernetes.default', 'kubernetes.default.svc'];
  return {
    dns: [
      spec.api.domain,
      ...masterServiceNames(cluster),
      ...inCluster,
      `kubernetes.default.svc.${CLUSTER_DOMAIN}`,
      'localhost',
    ],
    ips: [serviceAddress(spec.network.serviceCIDR ?? DEFAULT_SERVICE_CIDR, 1), '127.0.0.1'],
  };
}

const client = (
  name: string,
  commonName: string,
  organizations: string[] = [],
  issuer: CaName = 'ca',
): DesiredCertificate => ({
  name,
  issuer,
  commonName,
  organizations,
  dnsNames: [],
  ipAddresses: [],
  usages: ['clientAuth'],
});

/** Every certificate the cluster's control plane needs, in a fixed order. */
export function desiredCertificates(cluster: string, spec: KVMClusterSpecType): DesiredCertificate[] {
  const api = apiServerSans(cluster, spec);
  const etcdSans = { dnsNames: ['localhost', ...masterServiceNames(cluster)], ipAddresses: ['127.0.0.1'] };
  const etcd = clusterNodes(spec)
    .filter((n) => n.role === 'master')
    .flatMap((m): DesiredCertificate[] => [
      { name: `etcd-server-${m.id}`, ...etcdOf(m.id), ...etcdSans },
      { name: `etcd-peer-${m.id}`, ...etcdOf(m.id), ...etcdSans },
    ]);
  return [
    {
      name: 'apiserver',
      issuer: 'ca',
      commonName: 'kube-apiserver',
      organizations: [],
      dnsNames: api.dns,
      ipAddresses: api.ips,
      usages: ['serverAuth'],
    },
    // The API server calls kubelets (logs, exec) as a cluster admin, as kubeadm's does.
    client('apiserver-kubelet-client', 'kube-apiserver-kubelet-client', ['system:masters']),
    client('apiserver-etcd-client', 'kube-apiserver-etcd-client', [], 'etcd-ca'),
    ...etcd,
    client('controller-manager', 'system:kube-controller-manager'),
    client('scheduler', 'system:kube-scheduler'),
    // The operator's own access (its kubeconfig Secret): system:masters, so no RBAC in the workload is needed first.
    client('admin', 'nodewarden-admin', ['system:masters']),
  ];
}

const etcdOf = (id: string) => ({
  issuer: 'etcd-ca' as const,
  commonName: id,
  organizations: [],
  usages: ['serverAuth', 'clientAuth'] as ExtUsage[],
  master: id,
});

const sameSet = (a: readonly string[], b: readonly string[]) =>
  a.length === b.length && [...a].sort().every((x, i) => x === [...b].sort()[i]);

function sameSubject(want: DesiredCertificate, held: HeldCertificate): boolean {
  return (
    want.commonName === held.commonName &&
    sameSet(want.organizations, held.organizations) &&
    sameSet(want.dnsNames, held.dnsNames) &&
    sameSet(want.ipAddresses, held.ipAddresses)
  );
}

/** When a certificate valid from notBefore to notAfter is issued again. */
export function renewalAt(c: Pick<HeldCertificate, 'notBefore' | 'notAfter'>): number {
  return c.notBefore + Math.floor((c.notAfter - c.notBefore) * RENEW_AT_FRACTION);
}

function dueCause(c: Pick<HeldCertificate, 'notBefore' | 'notAfter'>, now: number): IssueCause | undefined {
  if (now >= c.notAfter) return 'expired';
  if (now >= renewalAt(c)) return 'renewal';
  return undefined;
}

export interface PkiObservation {
  desired: readonly DesiredCertificate[];
  /** The CAs held. */
  cas: Partial<Record<CaName, Pick<HeldCertificate, 'notBefore' | 'notAfter'>>>;
  held: readonly HeldCertificate[];
  now: number;
}

function certCause(want: DesiredCertificate, held: HeldCertificate | undefined, now: number) {
  if (!held) return 'missing';
  if (held.issuedBy !== want.issuer) return 'otherCa';
  if (!sameSubject(want, held)) return 'subjectChanged';
  return dueCause(held, now);
}

/** What to issue now, and when to look again. */
export function planPki(o: PkiObservation): PkiPlan {
  const wanted = new Set(o.desired.map((d) => d.name));
  const drop = o.held.filter((h) => !wanted.has(h.name)).map((h) => h.name);
  const issueCas: PkiPlan['issueCas'] = [];
  let next: number | undefined;
  const later = (at: number) => {
    next = Math.min(next ?? Number.POSITIVE_INFINITY, at);
  };
  for (const name of CA_NAMES) {
    const ca = o.cas[name];
    const cause = ca ? dueCause(ca, o.now) : 'missing';
    if (cause) issueCas.push({ name, cause });
    else if (ca) later(renewalAt(ca));
  }
  const renewedCas = new Set(issueCas.map((c) => c.name));
  const byName = new Map(o.held.map((h) => [h.name, h]));
  const issue: PkiPlan['issue'] = [];
  for (const want of o.desired) {
    const held = byName.get(want.name);
    // Under a CA issued now, every certificate is issued again.
    const cause = renewedCas.has(want.issuer) ? 'otherCa' : certCause(want, held, o.now);
    if (cause) issue.push({ name: want.name, cause });
    else if (held) later(renewalAt(held));
  }
  return { issueCas, issue, drop, ...(next !== undefined ? { nextRenewalAt: next } : {}) };
}

/** A certificate and its key, PEM. */
export interface CertAndKey {
  certPem: string;
  keyPem: string;
}

/** The PKI material nodes are configured with (read from the management cluster's Secrets). */
export interface ClusterPki {
  ca: CertAndKey;
  etcdCa: CertAndKey;
  /** The key the controller-manager signs service-account tokens with, and its public half the API server checks. */
  serviceAccount: { keyPem: string; pubPem: string };
  /** The kubelets' bootstrap token, "<id>.<secret>" (kubeadm's format). */
  bootstrapToken: string;
  /** By DesiredCertificate name. */
  certs: Readonly<Record<string, CertAndKey>>;
}
