// The admission webhook server the operator runs on every replica (not only
// the leader: the API server calls whichever pod the Service picks). Three
// ways to get its certificate:
//   self-managed  a CA and serving cert kept in a Secret, rotated, caBundle patched (default)
//   cert-manager  files mounted from a Certificate's Secret (--webhook-cert-dir)
//   local         the operator runs outside a local cluster: a cert for 127.0.0.1 and a
//                 webhook configuration pointing at --webhook-url
import type { WebhookSpec } from '../capability.ts';
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
import { registerLocalWebhooks } from '../runtime/webhook-config.ts';

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

/** Serves every given webhook on one server, each at its own path, under one configuration. */
export async function startWebhooks(
  mgr: Manager,
  hooks: readonly WebhookSpec[],
  o: WebhookOptions,
): Promise<RunningWebhooks> {
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
    // The base URL: each webhook's own path is appended to it.
    await registerLocalWebhooks(
      mgr.client,
      { name: o.configurationName, url: o.url, urlIsBase: true, caPem: ca.cert },
      hooks,
    );
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
  for (const hook of hooks) server.register(hook.path, await hook.handler(mgr));
  await server.start();
  const running = server;
  return {
    async stop() {
      stopSource();
      await running.stop();
    },
  };
}
