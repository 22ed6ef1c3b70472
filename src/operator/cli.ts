// `nodewarden operator`: runs the capabilities' controllers and webhooks
// against any conformant cluster, in-cluster or through a kubeconfig. Its own
// flags are the runtime's; each capability adds its own (src/capability.ts).
import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { capabilities as shipped } from '../capabilities.ts';
import type { AnyCapability, FlagValues } from '../capability.ts';
import { KubeConfig } from '../runtime/kubeconfig.ts';
import { rootLogger, setLogLevel } from '../runtime/log.ts';
import { Manager } from '../runtime/manager.ts';
import {
  HELP_COLUMN,
  helpLines,
  parseOptions,
  RUNTIME_FLAGS,
  RuntimeFlagValues,
  withDefaultInHelp,
} from './flags.ts';
import { type RunningWebhooks, startWebhooks } from './webhooks.ts';

export function operatorHelp(capabilities: readonly AnyCapability[]): string {
  const names = capabilities.flatMap((c) => c.controllers.map((ctl) => ctl.name));
  const providers = capabilities.flatMap((c) => c.providers ?? []);
  return [
    'Usage: nodewarden operator [flags]',
    '',
    ...helpLines(RUNTIME_FLAGS.map(withDefaultInHelp)),
    ...capabilities.flatMap((c) =>
      c.flags?.length ? ['', `${c.name}:`, ...helpLines(c.flags.map(withDefaultInHelp))] : [],
    ),
    '',
    ...(providers.length
      ? [
          'Providers:',
          ...providers.map((p) => `${`  --${p.kind}-provider ${p.name}`.padEnd(HELP_COLUMN)}${p.summary}`),
          '',
        ]
      : []),
    `Controllers: ${names.length ? names.join(', ') : '(none yet)'}`,
  ].join('\n');
}

const SA_NAMESPACE = '/var/run/secrets/kubernetes.io/serviceaccount/namespace';
const SA_TOKEN = '/var/run/secrets/kubernetes.io/serviceaccount/token';

/** In a pod when Kubernetes gave the process a Service address and a service-account token. */
const runsIn = (): 'pod' | 'host' =>
  process.env.KUBERNETES_SERVICE_HOST && existsSync(SA_TOKEN) ? 'pod' : 'host';

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
  if (given.help) {
    console.log(operatorHelp(capabilities));
    return 0;
  }
  const flags = new RuntimeFlagValues(given);
  setLogLevel(flags.string('log-level'));
  const wanted = wantedControllers(flags.optional('controllers'), capabilities);
  const kc = loadKubeConfig(flags.optional('kubeconfig'));
  const namespace = operatorNamespace(flags.optional('leader-election-namespace'));
  const mgr = newManager(kc, flags, namespace);
  const { running, chosen } = await setUpControllers(mgr, capabilities, given, wanted, namespace);

  const stop = stopOnSignals();
  rootLogger.info(
    { identity: mgr.identity, controllers: chosen, server: kc.getCurrentCluster()?.server },
    'starting operator',
  );
  const webhooks = await startCapabilityWebhooks(mgr, running, flags, namespace);
  try {
    await mgr.start(stop);
  } finally {
    await webhooks?.stop();
  }
  rootLogger.info('stopped');
  return 0;
}

/** The controllers --controllers names (undefined: all); throws on a name no capability has. */
function wantedControllers(
  text: string | undefined,
  capabilities: readonly AnyCapability[],
): string[] | undefined {
  const available = capabilities.flatMap((c) => c.controllers.map((ctl) => ctl.name));
  const wanted = text
    ?.split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const unknown = wanted?.filter((n) => !available.includes(n)) ?? [];
  if (unknown.length)
    throw new Error(`unknown controllers: ${unknown.join(', ')} (have: ${available.join(', ') || 'none'})`);
  return wanted;
}

function loadKubeConfig(path: string | undefined): KubeConfig {
  const kc = new KubeConfig();
  if (path) kc.loadFromFile(path);
  else kc.loadFromDefault();
  return kc;
}

/** The operator's namespace: the flag's, the pod's (from the downward API or its service account), or default. */
function operatorNamespace(given: string | undefined): string {
  return (
    given ??
    process.env.POD_NAMESPACE ??
    (existsSync(SA_NAMESPACE) ? readFileSync(SA_NAMESPACE, 'utf8').trim() : 'default')
  );
}

function newManager(kc: KubeConfig, flags: RuntimeFlagValues, namespace: string): Manager {
  const metrics = metricsServing(
    {
      secure: flags.on('metrics-secure'),
      insecure: flags.on('metrics-insecure'),
      address: flags.optional('metrics-bind-address'),
      certDir: flags.optional('metrics-cert-dir'),
    },
    runsIn() === 'pod',
  );
  if (!metrics.secure && metrics.address !== '0' && !/^(127\.|\[?::1\]?:|localhost:)/.test(metrics.address))
    rootLogger.warn(
      { address: metrics.address },
      '/metrics is served over plain HTTP without authorization on a non-loopback address',
    );
  return new Manager({
    kubeConfig: kc,
    client: {
      qps: Number(flags.string('qps')),
      burst: Number(flags.string('burst')),
      userAgent: 'nodewarden-operator',
    },
    // A fresh identity each start, as controller-runtime's: a container restarted in the same
    // pod (its pid is 1 again) is a stranger to the lease its crashed predecessor held.
    identity: process.env.POD_NAME ? `${process.env.POD_NAME}_${randomUUID()}` : undefined,
    leaderElection: {
      enabled: flags.on('leader-elect'),
      namespace,
      name: flags.string('leader-election-id'),
    },
    metricsBindAddress: metrics.address,
    metricsSecure: metrics.secure ? { certDir: metrics.certDir } : undefined,
    healthProbeBindAddress: flags.string('health-probe-bind-address'),
    gracefulShutdownMs: Number(flags.string('graceful-shutdown-seconds')) * 1000,
    log: rootLogger,
  });
}

/**
 * Sets up the wanted controllers of each capability (all when none are named),
 * each capability reading only its own flags; options are decided before any
 * controller starts. Returns the capabilities with a controller set up, and the
 * controllers' names.
 */
async function setUpControllers(
  mgr: Manager,
  capabilities: readonly AnyCapability[],
  given: FlagValues,
  wanted: readonly string[] | undefined,
  namespace: string,
): Promise<{ running: AnyCapability[]; chosen: string[] }> {
  const running: AnyCapability[] = [];
  const chosen: string[] = [];
  for (const c of capabilities) {
    const mine = wanted ? c.controllers.filter((ctl) => wanted.includes(ctl.name)) : c.controllers;
    if (!mine.length) continue;
    const own: FlagValues = Object.fromEntries((c.flags ?? []).map((f) => [f.name, given[f.name]]));
    const context = { client: mgr.client, namespace, log: rootLogger, runsIn: runsIn() };
    const options = c.options ? await c.options(own, context) : {};
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
  return { running, chosen };
}

/** A signal that aborts on the first SIGTERM or SIGINT; a second one exits at once. */
function stopOnSignals(): AbortSignal {
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
  return stop.signal;
}

/** The running capabilities' webhooks, served on every replica, leader or not: they only read the cache. */
async function startCapabilityWebhooks(
  mgr: Manager,
  running: readonly AnyCapability[],
  flags: RuntimeFlagValues,
  namespace: string,
): Promise<RunningWebhooks | undefined> {
  const hooks = running.flatMap((c) => c.webhooks ?? []);
  const bindAddress = flags.string('webhook-bind-address');
  if (!hooks.length || bindAddress === '0') return undefined;
  return startWebhooks(mgr, hooks, {
    bindAddress,
    namespace,
    certDir: flags.optional('webhook-cert-dir'),
    secretName: flags.string('webhook-secret-name'),
    serviceName: flags.string('webhook-service-name'),
    configurationName: flags.string('webhook-configuration-name'),
    url: flags.optional('webhook-url'),
  });
}
