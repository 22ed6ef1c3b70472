// The admission webhook server the operator runs on every replica (not only
// the leader: the API server calls whichever pod the Service picks). Three
// ways to get its certificate:
//   self-managed  a CA and serving cert kept in a Secret, rotated, caBundle patched (default)
//   cert-manager  files mounted from a Certificate's Secret (--webhook-cert-dir)
//   local         the operator runs outside a local cluster: a cert for 127.0.0.1 and a
//                 webhook configuration pointing at --webhook-url
import {
  NODE_MAINTENANCE_WEBHOOK_PATH,
  nodeMaintenanceWebhook,
  registerLocalWebhook,
} from '../maintenance/webhook.ts';
import {
  CertDirWatcher,
  type CertKeyPair,
  generateCa,
  issueServingCert,
  SecretCertSource,
  serviceDnsNames,
} from '../runtime/certs.ts';
import type { Manager } from '../runtime/manager.ts';
import { WebhookServer } from '../runtime/webhook.ts';

export interface WebhookOptions {
  bindAddress: string;
  namespace: string;
  certDir?: string;
  secretName: string;
  serviceName: string;
  configurationName: string;
  /** Local mode: the URL the API server should call, e.g. https://127.0.0.1:9443. */
  url?: string;
}

export interface RunningWebhooks {
  stop(): Promise<void>;
}

export async function startWebhooks(mgr: Manager, o: WebhookOptions): Promise<RunningWebhooks> {
  let serving: CertKeyPair;
  let stopSource = () => {};
  let server: WebhookServer | undefined;
  if (o.url) {
    const host = new URL(o.url).hostname;
    const ca = generateCa({ commonName: 'nodewarden local webhook CA' });
    serving = issueServingCert(ca, {
      dnsNames: ['localhost'],
      ips: [host === 'localhost' ? '127.0.0.1' : host],
    });
    await registerLocalWebhook(mgr.client, {
      name: o.configurationName,
      url: `${o.url.replace(/\/$/, '')}${NODE_MAINTENANCE_WEBHOOK_PATH}`,
      caPem: ca.cert,
    });
  } else if (o.certDir) {
    const watcher = new CertDirWatcher(o.certDir, { onChange: (pair) => server?.setCertificate(pair) });
    serving = watcher.start();
    stopSource = () => watcher.stop();
  } else {
    const source = new SecretCertSource(mgr.client, {
      namespace: o.namespace,
      secretName: o.secretName,
      dnsNames: serviceDnsNames(o.serviceName, o.namespace),
      webhookConfigurations: [o.configurationName],
      onChange: (pair) => server?.setCertificate(pair),
      log: mgr.log,
    });
    serving = (await source.start()).serving;
    stopSource = () => source.stop();
  }
  server = new WebhookServer({ bindAddress: o.bindAddress, tls: serving, log: mgr.log });
  server.register(NODE_MAINTENANCE_WEBHOOK_PATH, nodeMaintenanceWebhook(mgr.cache));
  await server.start();
  const running = server;
  return {
    async stop() {
      stopSource();
      await running.stop();
    },
  };
}
