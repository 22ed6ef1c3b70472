// The fleet's self-signed certificate, as real BMCs ship one: made once with
// the openssl command in the fleet's folder and kept, so clients that pin the
// published CA keep trusting the fleet across restarts.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export interface FleetCertificate {
  /** PEM; also the CA a client trusts, as the certificate signs itself. */
  cert: string;
  key: string;
}

export function certificatePaths(dir: string): { cert: string; key: string } {
  return { cert: join(dir, 'tls.crt'), key: join(dir, 'tls.key') };
}

/** The folder's certificate, made first if absent (valid ten years, for 127.0.0.1 and localhost). */
export function ensureCertificate(dir: string, cluster: string): FleetCertificate {
  const p = certificatePaths(dir);
  if (!existsSync(p.cert) || !existsSync(p.key)) {
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:prime256v1',
        '-nodes',
        '-keyout',
        p.key,
        '-out',
        p.cert,
        '-days',
        '3650',
        '-subj',
        `/O=nodewarden/CN=simulated BMC fleet of ${cluster}`,
        '-addext',
        'subjectAltName=IP:127.0.0.1,DNS:localhost',
        '-addext',
        'basicConstraints=critical,CA:TRUE',
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
  }
  return readCertificate(dir) as FleetCertificate;
}

export function readCertificate(dir: string): FleetCertificate | undefined {
  const p = certificatePaths(dir);
  if (!existsSync(p.cert) || !existsSync(p.key)) return undefined;
  return { cert: readFileSync(p.cert, 'utf8'), key: readFileSync(p.key, 'utf8') };
}
