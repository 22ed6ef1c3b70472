// The certificate /metrics is served with: the pair a directory holds
// (cert-manager's tls.crt and tls.key, reloaded when it changes), or, when
// none is given, one minted at start, as controller-runtime does. A scraper
// then either trusts the mounted CA or skips verification, and relies on the
// bearer-token check (metrics-auth.ts) for who may read.
import { hostname } from 'node:os';
import { CertDirWatcher } from './certs.ts';
import type { Logger } from './log.ts';
import { type CertKeyPair, generateCa, issueServingCert } from './x509.ts';

export interface MetricsCertificate {
  pair: CertKeyPair;
  /** Present with a certificate directory: stop it at shutdown. */
  watcher?: CertDirWatcher;
}

/** Loads the pair from `certDir` (reloaded, `onChange` told), or mints a self-signed one. */
export function metricsCertificate(opts: {
  certDir?: string;
  onChange?: (pair: CertKeyPair) => void;
  log?: Logger;
}): MetricsCertificate {
  if (opts.certDir) {
    const watcher = new CertDirWatcher(opts.certDir, { onChange: opts.onChange, log: opts.log });
    return { pair: watcher.start(), watcher };
  }
  const ca = generateCa();
  const pair = issueServingCert(ca, { dnsNames: ['localhost', hostname()], ips: ['127.0.0.1', '::1'] });
  // The chain, so a client that pins the leaf's issuer can still verify it.
  return { pair: { cert: pair.cert + ca.cert, key: pair.key } };
}
