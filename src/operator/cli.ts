// `nodewarden operator`: runs the controllers against any conformant cluster,
// in-cluster or through a kubeconfig.
import { existsSync, readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { KubeConfig } from '@kubernetes/client-node';
import { rootLogger, setLogLevel } from '../runtime/log.ts';
import { Manager } from '../runtime/manager.ts';
import { cloudFromFlags } from '../upgrade/providers/from-flags.ts';
import { type ControllerRegistration, controllers as shipped } from './controllers.ts';
import { startWebhooks } from './webhooks.ts';

const HELP = `Usage: nodewarden operator [flags]

  --kubeconfig PATH                  kubeconfig (default: $KUBECONFIG, ~/.kube/config, then in-cluster)
  --controllers a,b                  controllers to run (default: all)
  --leader-elect                     hold a Lease so only one replica reconciles
  --leader-election-namespace NS     namespace of that Lease (default: $POD_NAMESPACE or the pod's namespace)
  --leader-election-id NAME          name of that Lease (default nodewarden-leader)
  --metrics-bind-address ADDR        /metrics address, "0" to disable (default :8080)
  --health-probe-bind-address ADDR   /healthz and /readyz address, "0" to disable (default :8081)
  --graceful-shutdown-seconds N      time in-flight reconciles get at shutdown (default 30)
  --maintenance-lease-namespace NS   namespace of the per-node Leases held during maintenance
                                     (default: the operator's namespace; "medik8s-leases" interoperates with medik8s NHC)
  --cloud-provider NAME              cloud to replace nodes through: none (default) or simulated;
                                     the upgrade controllers run only with a cloud
  --cloud-endpoint URL               the simulated cloud's API (default: from the local cluster's
                                     kube-system/nodewarden-simulated-cloud ConfigMap)
  --cluster-id ID                    the cluster's id in the cloud (scaling-group discovery)
  --qps N, --burst N                 client-side rate limit towards the API server (default 50/100)
  --webhook-bind-address ADDR        admission webhook address, "0" to disable (default :9443)
  --webhook-cert-dir DIR             serve tls.crt/tls.key from DIR (cert-manager) instead of a self-managed Secret
  --webhook-secret-name NAME         Secret holding the self-managed webhook PKI (default nodewarden-webhook-server-cert)
  --webhook-service-name NAME        Service in front of the webhook (default nodewarden-webhook)
  --webhook-configuration-name NAME  ValidatingWebhookConfiguration to keep the caBundle of
                                     (default nodewarden-validating-webhook-configuration)
  --webhook-url URL                  operator outside a local cluster: register the webhook at URL
                                     (e.g. https://127.0.0.1:9443) with a certificate for that address
  --log-level LEVEL                  trace, debug, info, warn, error (default info)

Controllers: ${shipped.length ? shipped.map((c) => c.name).join(', ') : '(none yet)'}`;

const SA_NAMESPACE = '/var/run/secrets/kubernetes.io/serviceaccount/namespace';

export async function operatorCommand(
  args: string[],
  available: ControllerRegistration[] = shipped,
): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      kubeconfig: { type: 'string' },
      controllers: { type: 'string' },
      'leader-elect': { type: 'boolean', default: false },
      'leader-election-namespace': { type: 'string' },
      'leader-election-id': { type: 'string', default: 'nodewarden-leader' },
      'metrics-bind-address': { type: 'string', default: ':8080' },
      'health-probe-bind-address': { type: 'string', default: ':8081' },
      'graceful-shutdown-seconds': { type: 'string', default: '30' },
      'maintenance-lease-namespace': { type: 'string' },
      'webhook-bind-address': { type: 'string', default: ':9443' },
      'webhook-cert-dir': { type: 'string' },
      'webhook-secret-name': { type: 'string', default: 'nodewarden-webhook-server-cert' },
      'webhook-service-name': { type: 'string', default: 'nodewarden-webhook' },
      'webhook-configuration-name': {
        type: 'string',
        default: 'nodewarden-validating-webhook-configuration',
      },
      'webhook-url': { type: 'string' },
      'cloud-provider': { type: 'string', default: process.env.NODEWARDEN_CLOUD_PROVIDER ?? 'none' },
      'cloud-endpoint': { type: 'string' },
      'cluster-id': { type: 'string' },
      qps: { type: 'string', default: '50' },
      burst: { type: 'string', default: '100' },
      'log-level': { type: 'string', default: process.env.NODEWARDEN_LOG_LEVEL ?? 'info' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    console.log(HELP);
    return 0;
  }
  setLogLevel(values['log-level']);

  const wanted = values.controllers
    ?.split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const unknown = wanted?.filter((n) => !available.some((c) => c.name === n)) ?? [];
  if (unknown.length)
    throw new Error(
      `unknown controllers: ${unknown.join(', ')} (have: ${available.map((c) => c.name).join(', ') || 'none'})`,
    );
  let chosen = wanted ? available.filter((c) => wanted.includes(c.name)) : available;

  const kc = new KubeConfig();
  if (values.kubeconfig) kc.loadFromFile(values.kubeconfig);
  else kc.loadFromDefault();

  const namespace =
    values['leader-election-namespace'] ??
    process.env.POD_NAMESPACE ??
    (existsSync(SA_NAMESPACE) ? readFileSync(SA_NAMESPACE, 'utf8').trim() : 'default');
  const mgr = new Manager({
    kubeConfig: kc,
    client: { qps: Number(values.qps), burst: Number(values.burst), userAgent: 'nodewarden-operator' },
    identity: process.env.POD_NAME ? `${process.env.POD_NAME}_${process.pid}` : undefined,
    leaderElection: { enabled: values['leader-elect'], namespace, name: values['leader-election-id'] },
    metricsBindAddress: values['metrics-bind-address'],
    healthProbeBindAddress: values['health-probe-bind-address'],
    gracefulShutdownMs: Number(values['graceful-shutdown-seconds']) * 1000,
    log: rootLogger,
  });
  const { cloud, clusterId } = await cloudFromFlags(
    {
      provider: values['cloud-provider'],
      endpoint: values['cloud-endpoint'],
      clusterId: values['cluster-id'],
    },
    mgr.client,
  );
  if (!cloud) {
    const needy = chosen.filter((c) => c.needsCloud);
    if (wanted && needy.length) {
      throw new Error(`${needy.map((c) => c.name).join(', ')} need a cloud: give --cloud-provider`);
    }
    if (needy.length)
      rootLogger.info({ skipped: needy.map((c) => c.name) }, 'no --cloud-provider: upgrade controllers off');
    chosen = chosen.filter((c) => !c.needsCloud);
  }
  const options = {
    maintenanceLeaseNamespace: values['maintenance-lease-namespace'] ?? namespace,
    clusterId,
    ...(cloud ? { cloud } : {}),
  };
  for (const c of chosen) c.setup(mgr, options);

  const stop = new AbortController();
  let signals = 0;
  const onSignal = (sig: NodeJS.Signals) => {
    signals++;
    if (signals > 1) {
      rootLogger.warn({ signal: sig }, 'second signal: exiting now');
      process.exit(1);
    }
    rootLogger.info({ signal: sig }, 'shutting down');
    stop.abort();
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  rootLogger.info(
    {
      identity: mgr.identity,
      controllers: chosen.map((c) => c.name),
      server: kc.getCurrentCluster()?.server,
    },
    'starting operator',
  );
  // Webhooks serve on every replica, leader or not; they only read the cache.
  const webhooks =
    chosen.some((c) => c.name === 'nodemaintenance') && values['webhook-bind-address'] !== '0'
      ? await startWebhooks(mgr, {
          bindAddress: values['webhook-bind-address'],
          namespace,
          certDir: values['webhook-cert-dir'],
          secretName: values['webhook-secret-name'],
          serviceName: values['webhook-service-name'],
          configurationName: values['webhook-configuration-name'],
          url: values['webhook-url'],
        })
      : undefined;
  try {
    await mgr.start(stop.signal);
  } finally {
    await webhooks?.stop();
  }
  rootLogger.info('stopped');
  return 0;
}
