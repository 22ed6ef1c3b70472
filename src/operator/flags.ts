// The operator's own flags, said once: each entry's `default` is what parsing
// applies, what --help shows ("(default X)") and what the command reads, so a
// default is never written a second time. A default that depends on where the
// operator runs (the kubeconfig, the namespace, the /metrics address) is not a
// value: its entry leaves `default` out and describes it in `help`.
import type { FlagValues, OperatorFlag } from '../capability.ts';

/** The runtime's own flags; a capability's come after them in --help. */
export const RUNTIME_FLAGS: readonly OperatorFlag[] = [
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
    help: 'name of that Lease',
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
    help: '/healthz and /readyz address, "0" to disable',
  },
  {
    name: 'graceful-shutdown-seconds',
    type: 'string',
    placeholder: 'N',
    default: '30',
    help: 'time in-flight reconciles get at shutdown',
  },
  {
    name: 'qps',
    type: 'string',
    placeholder: 'N',
    default: '50',
    help: 'client-side rate limit towards the API server',
  },
  { name: 'burst', type: 'string', placeholder: 'N', default: '100', help: 'burst above --qps' },
  {
    name: 'webhook-bind-address',
    type: 'string',
    placeholder: 'ADDR',
    default: ':9443',
    help: 'admission webhook address, "0" to disable',
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
    help: 'Secret holding the self-managed webhook PKI',
  },
  {
    name: 'webhook-service-name',
    type: 'string',
    placeholder: 'NAME',
    default: 'nodewarden-webhook',
    help: 'Service in front of the webhook',
  },
  {
    name: 'webhook-configuration-name',
    type: 'string',
    placeholder: 'NAME',
    default: 'nodewarden-validating-webhook-configuration',
    help: 'ValidatingWebhookConfiguration to keep the caBundle of',
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
    help: 'trace, debug, info, warn, error',
  },
];

/** A default that would take a help line past this many characters goes on a line of its own. */
const HELP_WIDTH = 90;
/** Where the help text starts, after "  --flag PLACEHOLDER". */
export const HELP_COLUMN = 37;

/** A flag's help with its default said, taken from the flag's `default` (the runtime's and every capability's). */
export function withDefaultInHelp(flag: OperatorFlag): OperatorFlag {
  if (typeof flag.default !== 'string') return flag;
  const said = `(default ${flag.default})`;
  const lines = flag.help.split('\n');
  const last = lines.pop() ?? '';
  const tail = last.length + 1 + said.length > HELP_WIDTH ? [last, said] : [`${last} ${said}`];
  return { ...flag, help: [...lines, ...tail].join('\n') };
}

/** The --help lines of these flags, their help in one column. */
export function helpLines(flags: readonly OperatorFlag[]): string[] {
  return flags.flatMap((f) => {
    const head = `  --${f.name}${f.placeholder ? ` ${f.placeholder}` : ''}`;
    const [first = '', ...rest] = f.help.split('\n');
    return [`${head.padEnd(HELP_COLUMN)}${first}`, ...rest.map((l) => `${' '.repeat(HELP_COLUMN)}${l}`)];
  });
}

/** node:util parseArgs options for these flags, with their environment and defaults applied. */
export function parseOptions(flags: readonly OperatorFlag[]) {
  const options: Record<string, { type: 'string' | 'boolean'; default?: string | boolean; short?: string }> =
    {};
  for (const f of flags) {
    const fallback = f.env ? (process.env[f.env] ?? f.default) : f.default;
    options[f.name] = { type: f.type, ...(fallback !== undefined ? { default: fallback } : {}) };
  }
  return options;
}

/** Reads parsed runtime flags; a flag with a default in RUNTIME_FLAGS always has a value. */
export class RuntimeFlagValues {
  private readonly given: FlagValues;

  constructor(given: FlagValues) {
    this.given = given;
  }

  /** A string flag without a default: undefined when not given. */
  optional(name: string): string | undefined {
    return this.given[name] as string | undefined;
  }

  /** A string flag with a default in the table. */
  string(name: string): string {
    const value = this.given[name];
    if (typeof value !== 'string') throw new Error(`--${name} has no default in RUNTIME_FLAGS`);
    return value;
  }

  /** A boolean flag: true only when given. */
  on(name: string): boolean {
    return this.given[name] === true;
  }
}
