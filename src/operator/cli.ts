// `nodewarden operator`: runs the capabilities' controllers and webhooks
// against any conformant cluster, in-cluster or through a kubeconfig. Its own
// flags are the runtime's; each capability adds its own (src/capability.ts).
import { existsSync, readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { capabilities as shipped } from '../capabilities.ts';
import type { AnyCapability, FlagValues, OperatorFlag } from '../capability.ts';
import { KubeConfig } from '../runtime/kubeconfig.ts';
import { rootLogger, setLogLevel } from '../runtime/log.ts';
import { Manager } from '../runtime/manager.ts';
import { startWebhooks } from './webhooks.ts';

/** The runtime's own flags; a capability's come after them in --help. */
const RUNTIME_FLAGS: readonly OperatorFlag[] = [
  {
    name: 'kubeconfig',
    type: 'string',
    placeholder: 'PATH',
    help: 'kubeconfig (default: $KUBECONFIG, ~/.kube/config, then in-cluster)',
  },
  { name: 'controllers', type: 'string', placeholder: 'a,b', help: 'controllers to run (default: all)' },
  {
    name: 'leader-elect',
    type: 'boolean',
    default: false,
    help: 'hold a Lease so only one replica reconciles',
  },
  {
    name: 'leader-election-namespace',
    type: 'string',
    placeholder: 'NS',
    help: "namespace of that Lease (default: $POD_NAMESPACE or the pod's namespace)",
  },
  {
    name: 'leader-election-id',
    type: 'string',
    placeholder: 'NAME',
    default: 'nodewarden-leader',
    help: 'name of that Lease (default nodewarden-leader)',
  },
  {
    name: 'metrics-bind-address',
    type: 'string',
    placeholder: 'ADDR',
    help: '/metrics address, "0" to disable (default :8443 secure, :8080 plain;\nout of cluster 127.0.0.1 only)',
  },
  {
    name: 'metrics-secure',
    type: 'boolean',
    help: '/metrics over HTTPS for callers the API server authenticates and\nauthorizes (get on /metrics); the default in a cluster',
  },
  {
    name: 'metrics-insecure',
    type: 'boolean',
    help: '/metrics over plain HTTP to anyone who can connect; the default out of cluster',
  },
  {
    name: 'metrics-cert-dir',
    type: 'string',
    placeholder: 'DIR',
    help: 'serve /metrics with tls.crt/tls.key from DIR (default: a self-signed pair)',
  },
  {
    name: 'health-probe-bind-address',
    type: 'string',
    placeholder: 'ADDR',
    default: ':8081',
    help: '/healthz and /readyz address, "0" to disable (default :8081)',
  },
  {
    name: 'graceful-shutdown-seconds',
    type: 'string',
    placeholder: 'N',
    default: '30',
    help: 'time in-flight reconciles get at shutdown (default 30)',
  },
  {
    name: 'qps',
    type: 'string',
    placeholder: 'N',
    default: '50',
    help: 'client-side rate limit towards the API server (default 50)',
  },
  {
    name: 'burst',
    type: 'string',
    placeholder: 'N',
    default: '100',
    help: 'burst above --qps (default 100)',
  },
  {
    name: 'webhook-bind-address',
    type: 'string',
    placeholder: 'ADDR',
    default: ':9443',
    help: 'admission webhook address, "0" to disable (default :9443)',
  },
  {
    name: 'webhook-cert-dir',
    type: 'string',
    placeholder: 'DIR',
    help: 'serve tls.crt/tls.key from DIR (cert-manager) instead of a self-managed Secret',
  },
  {
    name: 'webhook-secret-name',
    type: 'string',
    placeholder: 'NAME',
    default: 'nodewarden-webhook-server-cert',
    help: 'Secret holding the self-managed webhook PKI (default nodewarden-webhook-server-cert)',
  },
  {
    name: 'webhook-service-name',
    type: 'string',
    placeholder: 'NAME',
    default: 'nodewarden-webhook',
    help: 'Service in front of the webhook (default nodewarden-webhook)',
  },
  {
    name: 'webhook-configuration-name',
    type: 'string',
    placeholder: 'NAME',
    default: 'nodewarden-validating-webhook-configuration',
    help: 'ValidatingWebhookConfiguration to keep the caBundle of\n(default nodewarden-validating-webhook-configuration)',
  },
  {
    name: 'webhook-url',
    type: 'string',
    placeholder: 'URL',
    help: 'operator outside a local cluster: register the webhooks at URL\n(e.g. https://127.0.0.1:9443) with a certificate for that address',
  },
  {
    name: 'log-level',
    type: 'string',
    placeholder: 'LEVEL',
    env: 'NODEWARDEN_LOG_LEVEL',
    default: 'info',
    help: 'trace, debug, info, warn, error (default info)',
  },
];

function helpLines(flags: readonly OperatorFlag[]): string[] {
  return flags.flatMap((f) => {
    const head = `  --${f.name}${f.placeholder ? ` ${f.placeholder}` : ''}`;
    const [first = '', ...rest] = f.help.split('\n');
    return [`${head.padEnd(37)}${first}`, ...rest.map((l) => `${' '.repeat(37)}${l}`)];
  });
}

export function operatorHelp(capabilities: readonly AnyCapability[]): string {
  const names = capabilities.flatMap((c) => c.controllers.map((ctl) => ctl.name));
  const providers = capabilities.flatMap((c) => c.providers ?? []);
  return [
    'Usage: nodewarden operator [flags]',
    '',
    ...helpLines(RUNTIME_FLAGS),
    ...capabilities.flatMap((c) => (c.flags?.length ? ['', `${c.name}:`, ...helpLines(c.flags)] : [])),
    '',
    ...(providers.length
      ? [
          'Providers:',
          ...providers.map((p) => `${`  --${p.kind}-provider ${p.name}`.padEnd(37)}${p.summary}`),
          '',
        ]
      : []),
    `Controllers: ${names.length ? names.join(', ') : '(none yet)'}`,
  ].join('\n');
}

/** node:util parseArgs options for these flags, with their environment and defaults applied. */
function parseOptions(flags: readonly OperatorFlag[]) {
  const options: Record<string, { type: 'string' | 'boolean'; default?: string | boolean; short?: string }> =
    {};
  for (const f of flags) {
    const fallback = f.env ? (process.env[f.env] ?? f.default) : f.default;
    options[f.name] = { type: f.type, ...(fallback !== undefined ? { default: fallback } : {}) };
  }
  return options;
}

const SA_NAMESPACE = '/var/run/secrets/kubernetes.io/serviceaccount/namespace';
const SA_TOKEN = '/var/run/secrets/kubernetes.io/serviceaccount/token';

/**
 * How /metrics is served. In a pod: HTTPS with the API server's review on
 * :8443, as kubebuilder scaffolds. Out of cluster (a laptop, a test): plain
 * HTTP, reachable from this machine only. Either flag overrides the guess.
 */
export function metricsServing(
  given: { secure?: boolean; insecure?: boolean; address?: string; certDir?: string },
  inCluster: boolean,
): { address: string; secure: boolean; certDir?: string } {
  if (given.secure && given.insecure) throw new Error('--metrics-secure and --metrics-insecure conflict');
  const secure = given.secure ? true : given.insecure ? false : inCluster;
  if (given.certDir && !secure) throw new Error('--metrics-cert-dir needs --metrics-secure');
  const host = inCluster ? '' : '127.0.0.1';
  const address = given.address ?? `${host}:${secure ? 8443 : 8080}`;
  return { address, secure, certDir: given.certDir };
}

export async function operatorCommand(
  args: string[],
  capabilities: readonly AnyCapability[] = shipped,
): Promise<number> {
  const all = [...RUNTIME_FLAGS, ...capabilities.flatMap((c) => c.flags ?? [])];
  const { values } = parseArgs({
    args,
    options: { ...parseOptions(all), help: { type: 'boolean', short: 'h' } },
  });
  const given = values as FlagValues;
  const flag = (name: string) => given[name] as string | undefined;
  if (given.help) {
    console.log(operatorHelp(capabilities));
    return 0;
  }
  setLogLevel(flag('log-level') ?? 'info');

  const available = capabilities.flatMap((c) => c.controllers.map((ctl) => ({ capability: c, ctl })));
  const wanted = flag('controllers')
    ?.split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const unknown = wanted?.filter((n) => !available.some((a) => a.ctl.name === n)) ?? [];
  if (unknown.length)
    throw new Error(
      `unknown controllers: ${unknown.join(', ')} (have: ${available.map((a) => a.ctl.name).join(', ') || 'none'})`,
    );

  const kc = new KubeConfig();
  const kubeconfig = flag('kubeconfig');
  if (kubeconfig) kc.loadFromFile(kubeconfig);
  else kc.loadFromDefault();

  const namespace =
    flag('leader-election-namespace') ??
    process.env.POD_NAMESPACE ??
    (existsSync(SA_NAMESPACE) ? readFileSync(SA_NAMESPACE, 'utf8').trim() : 'default');
  const metrics = metricsServing(
    {
      secure: given['metrics-secure'] === true,
      insecure: given['metrics-insecure'] === true,
      address: flag('metrics-bind-address'),
      certDir: flag('metrics-cert-dir'),
    },
    Boolean(process.env.KUBERNETES_SERVICE_HOST) && existsSync(SA_TOKEN),
  );
  if (!metrics.secure && metrics.address !== '0' && !/^(127\.|\[?::1\]?:|localhost:)/.test(metrics.address))
    rootLogger.warn(
      { address: metrics.address },
      '/metrics is served over plain HTTP without authorization on a non-loopback address',
    );
  const mgr = new Manager({
    kubeConfig: kc,
    client: { qps: Number(flag('qps')), burst: Number(flag('burst')), userAgent: 'nodewarden-operator' },
    identity: process.env.POD_NAME ? `${process.env.POD_NAME}_${process.pid}` : undefined,
    leaderElection: {
      enabled: given['leader-elect'] === true,
      namespace,
      name: flag('leader-election-id') ?? 'nodewarden-leader',
    },
    metricsBindAddress: metrics.address,
    metricsSecure: metrics.secure ? { certDir: metrics.certDir } : undefined,
    healthProbeBindAddress: flag('health-probe-bind-address'),
    gracefulShutdownMs: Number(flag('graceful-shutdown-seconds')) * 1000,
    log: rootLogger,
  });

  // Each capability reads only its own flags; options are decided before any controller starts.
  const running: AnyCapability[] = [];
  const chosen: string[] = [];
  for (const c of capabilities) {
    const mine = wanted ? c.controllers.filter((ctl) => wanted.includes(ctl.name)) : c.controllers;
    if (!mine.length) continue;
    const own: FlagValues = Object.fromEntries((c.flags ?? []).map((f) => [f.name, given[f.name]]));
    const options = c.options ? await c.options(own, { client: mgr.client, namespace, log: rootLogger }) : {};
    const refused = mine.flatMap((ctl) => {
      const why = ctl.unavailable?.(options);
      return why ? [{ name: ctl.name, why }] : [];
    });
    if (wanted && refused.length) {
      throw new Error(`${refused.map((r) => r.name).join(', ')} ${refused[0]!.why}`);
    }
    if (refused.length)
      rootLogger.info(
        { skipped: refused.map((r) => r.name), capability: c.name },
        `${refused[0]!.why}: ${c.name} controllers off`,
      );
    const runnable = mine.filter((ctl) => !refused.some((r) => r.name === ctl.name));
    // setup imports the controller's module: only the controllers that run are loaded.
    for (const ctl of runnable) await ctl.setup(mgr, options);
    chosen.push(...runnable.map((ctl) => ctl.name));
    if (runnable.length) running.push(c);
  }

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
    { identity: mgr.identity, controllers: chosen, server: kc.getCurrentCluster()?.server },
    'starting operator',
  );
  // Webhooks serve on every replica, leader or not; they only read the cache.
  const hooks = running.flatMap((c) => c.webhooks ?? []);
  const webhooks =
    hooks.length && flag('webhook-bind-address') !== '0'
      ? await startWebhooks(mgr, hooks, {
          bindAddress: flag('webhook-bind-address') ?? ':9443',
          namespace,
          certDir: flag('webhook-cert-dir'),
          secretName: flag('webhook-secret-name') ?? 'nodewarden-webhook-server-cert',
          serviceName: flag('webhook-service-name') ?? 'nodewarden-webhook',
          configurationName:
            flag('webhook-configuration-name') ?? 'nodewarden-validating-webhook-configuration',
          url: flag('webhook-url'),
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
