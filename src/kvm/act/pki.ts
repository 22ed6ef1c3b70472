// Keeping a workload cluster's PKI in the management cluster: two Secrets next
// to the KVMCluster, owned by it (the garbage collector removes them with it,
// so nothing leaks), read by name every pass — `<id>-ca` (the two CAs, the
// service-account keys, the kubelets' bootstrap token) and `<id>-certificates`
// (every certificate plan/pki.ts names, with its key). The plan says what to
// issue; this issues it and writes a Secret only when its content changed.
import { randomBytes, X509Certificate } from 'node:crypto';
import { KVMClusterKind } from '../../api/kinds.ts';
import type { KubeClient } from '../../runtime/client.ts';
import { isNotFound } from '../../runtime/errors.ts';
import { Secrets } from '../../runtime/resources.ts';
import { caSecretName, certificatesSecretName, clusterLabels } from '../plan/names.ts';
import {
  BACKDATE_MS,
  CA_LIFETIME_MS,
  CA_NAMES,
  type CaName,
  type CertAndKey,
  type ClusterPki,
  type DesiredCertificate,
  desiredCertificates,
  type HeldCertificate,
  LEAF_LIFETIME_MS,
  type PkiPlan,
  planPki,
} from '../plan/pki.ts';
import type { KVMClusterObject } from '../plan/views.ts';
import { issueCertificate, serviceAccountKeys } from './x509.ts';

const FIELD_MANAGER = 'nodewarden-kvm-pki';

type SecretData = Record<string, string>;
type HeldCas = Partial<Record<CaName, X509Certificate>>;

/** What a certificate says, as plan/pki.ts compares it, and which of the held CAs signed it. */
export function heldCertificate(name: string, certPem: string, cas: HeldCas): HeldCertificate {
  const c = new X509Certificate(certPem);
  const subject = c.subject.split('\n');
  const field = (k: string) => subject.filter((l) => l.startsWith(`${k}=`)).map((l) => l.slice(k.length + 1));
  const sans = (c.subjectAltName ?? '').split(', ').filter(Boolean);
  const issuedBy = CA_NAMES.find((n) => {
    const ca = cas[n];
    return ca !== undefined && c.checkIssued(ca) && c.verify(ca.publicKey);
  });
  return {
    name,
    commonName: field('CN')[0] ?? '',
    organizations: field('O'),
    dnsNames: sans.filter((s) => s.startsWith('DNS:')).map((s) => s.slice(4)),
    ipAddresses: sans.filter((s) => s.startsWith('IP Address:')).map((s) => s.slice(11)),
    notBefore: Date.parse(c.validFrom),
    notAfter: Date.parse(c.validTo),
    ...(issuedBy ? { issuedBy } : {}),
  };
}

/** A bootstrap token as kubeadm makes them: 6 and 16 characters of [a-z0-9]. */
export function bootstrapToken(): string {
  const pick = (n: number) =>
    [...randomBytes(n)].map((b) => 'abcdefghijklmnopqrstuvwxyz0123456789'[b % 36]).join('');
  return `${pick(6)}.${pick(16)}`;
}

function issueLeaf(want: DesiredCertificate, ca: CertAndKey, now: number): CertAndKey {
  return issueCertificate(
    {
      commonName: want.commonName,
      organizations: want.organizations,
      dnsNames: want.dnsNames,
      ipAddresses: want.ipAddresses,
      keyUsages: ['digitalSignature'],
      extKeyUsages: want.usages,
      notBefore: new Date(now - BACKDATE_MS),
      notAfter: new Date(now + LEAF_LIFETIME_MS),
    },
    ca,
  );
}

function issueCa(cluster: string, name: CaName, now: number): CertAndKey {
  return issueCertificate({
    commonName: `${cluster}-${name}`,
    organizations: ['nodewarden'],
    isCA: true,
    keyUsages: ['digitalSignature', 'keyCertSign'],
    notBefore: new Date(now - BACKDATE_MS),
    notAfter: new Date(now + CA_LIFETIME_MS),
  });
}

const text = (data: SecretData | undefined, key: string) => {
  const v = data?.[key];
  return v ? Buffer.from(v, 'base64').toString('utf8') : undefined;
};
const b64 = (s: string) => Buffer.from(s).toString('base64');
const pairOf = (data: SecretData, name: string): CertAndKey => ({
  certPem: text(data, `${name}.crt`) ?? '',
  keyPem: text(data, `${name}.key`) ?? '',
});

/** The CA Secret's next content (the same object when nothing changed): CAs when due; the service-account keys and token once. */
function nextCaData(cluster: string, data: SecretData | undefined, plan: PkiPlan, now: number): SecretData {
  let next = data ?? {};
  for (const { name } of plan.issueCas) {
    const ca = issueCa(cluster, name, now);
    next = { ...next, [`${name}.crt`]: b64(ca.certPem), [`${name}.key`]: b64(ca.keyPem) };
  }
  if (!next['sa.key'] || !next['sa.pub']) {
    const sa = serviceAccountKeys();
    next = { ...next, 'sa.key': b64(sa.keyPem), 'sa.pub': b64(sa.pubPem) };
  }
  if (!next['bootstrap-token']) next = { ...next, 'bootstrap-token': b64(bootstrapToken()) };
  return next;
}

/** The certificates Secret's next content (the same object when nothing changed). */
function nextCertData(
  data: SecretData | undefined,
  plan: PkiPlan,
  desired: readonly DesiredCertificate[],
  cas: SecretData,
  now: number,
): SecretData {
  if (data && plan.issue.length === 0 && plan.drop.length === 0) return data;
  const next: SecretData = { ...data };
  for (const name of plan.drop) {
    delete next[`${name}.crt`];
    delete next[`${name}.key`];
  }
  for (const { name } of plan.issue) {
    const want = desired.find((d) => d.name === name);
    if (!want) continue;
    const pair = issueLeaf(want, pairOf(cas, want.issuer), now);
    next[`${name}.crt`] = b64(pair.certPem);
    next[`${name}.key`] = b64(pair.keyPem);
  }
  return next;
}

function heldCas(data: SecretData | undefined): HeldCas {
  const cas: HeldCas = {};
  for (const name of CA_NAMES) {
    const pem = text(data, `${name}.crt`);
    if (pem) cas[name] = new X509Certificate(pem);
  }
  return cas;
}

const validity = (c: X509Certificate) => ({
  notBefore: Date.parse(c.validFrom),
  notAfter: Date.parse(c.validTo),
});

export interface PkiResult {
  pki: ClusterPki;
  plan: PkiPlan;
}

export class PkiKeeper {
  private readonly client: KubeClient;

  constructor(client: KubeClient) {
    this.client = client;
  }

  /** The cluster's PKI as held, after issuing whatever the plan says is due. */
  async ensure(kc: KVMClusterObject, now: number): Promise<PkiResult> {
    const cluster = kc.metadata.name ?? '';
    const namespace = kc.metadata.namespace ?? 'default';
    const caData = await this.read(caSecretName(cluster), namespace);
    const certData = await this.read(certificatesSecretName(cluster), namespace);
    const desired = desiredCertificates(cluster, kc.spec);
    const cas = heldCas(caData);
    const held = Object.keys(certData ?? {})
      .filter((k) => k.endsWith('.crt'))
      .map((k) => heldCertificate(k.slice(0, -4), text(certData, k) ?? '', cas));
    const plan = planPki({
      desired,
      cas: Object.fromEntries(Object.entries(cas).map(([n, c]) => [n, validity(c)])),
      held,
      now,
    });
    const nextCa = nextCaData(cluster, caData, plan, now);
    const nextCerts = nextCertData(certData, plan, desired, nextCa, now);
    if (nextCa !== caData) await this.write(kc, caSecretName(cluster), nextCa);
    if (nextCerts !== certData) await this.write(kc, certificatesSecretName(cluster), nextCerts);
    return { pki: materialOf(nextCa, nextCerts, desired), plan };
  }

  private async read(name: string, namespace: string): Promise<SecretData | undefined> {
    try {
      const s = await this.client.get<{ data?: SecretData }>(Secrets, name, namespace);
      return s.data ?? {};
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  /** Server-side apply, owned by the KVMCluster: created or replaced in one call, gone with the cluster. */
  private async write(kc: KVMClusterObject, name: string, data: SecretData): Promise<void> {
    const body = ownedSecret(kc, name, data);
    await this.client.patch(Secrets, name, body.metadata.namespace, body, {
      type: 'apply',
      force: true,
      fieldManager: FIELD_MANAGER,
    });
  }
}

/** The KVMCluster as the owner of what is kept for it. */
export function ownerOf(kc: KVMClusterObject) {
  return {
    apiVersion: `${KVMClusterKind.group}/${KVMClusterKind.version}`,
    kind: KVMClusterKind.kind,
    name: kc.metadata.name ?? '',
    uid: kc.metadata.uid ?? '',
  };
}

/** A Secret kept for the KVMCluster next to it: labelled as the cluster's, owned by it (gone with it). */
export function ownedSecret(kc: KVMClusterObject, name: string, data: SecretData) {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name,
      namespace: kc.metadata.namespace ?? 'default',
      labels: clusterLabels(kc.metadata.name ?? ''),
      ownerReferences: [ownerOf(kc)],
    },
    type: 'Opaque',
    data,
  };
}

function materialOf(ca: SecretData, certs: SecretData, desired: readonly DesiredCertificate[]): ClusterPki {
  return {
    ca: pairOf(ca, 'ca'),
    etcdCa: pairOf(ca, 'etcd-ca'),
    serviceAccount: { keyPem: text(ca, 'sa.key') ?? '', pubPem: text(ca, 'sa.pub') ?? '' },
    bootstrapToken: text(ca, 'bootstrap-token') ?? '',
    certs: Object.fromEntries(desired.map((d) => [d.name, pairOf(certs, d.name)])),
  };
}

/** A whole new PKI for a cluster, in memory (what ensure writes for a cluster that has none). */
export function issueClusterPki(cluster: string, spec: KVMClusterObject['spec'], now: number): ClusterPki {
  const desired = desiredCertificates(cluster, spec);
  const plan = planPki({ desired, cas: {}, held: [], now });
  const ca = nextCaData(cluster, undefined, plan, now);
  return materialOf(ca, nextCertData(undefined, plan, desired, ca, now), desired);
}
