// The capability contract: what one capability (maintenance, rolling upgrades,
// bare-metal hosts, …) is, as one value. The operator, the nodewarden command,
// `make manifests` and the local cluster iterate the list in capabilities.ts
// and never name a capability themselves, so adding one is its own folder and
// one line there. Types only: this file is a leaf every capability may import.
//
// Declarations are values, code is loaded on demand. A capability's value holds
// what can be listed without running anything (names, summaries, flags, RBAC,
// CRDs); every function that runs its code (a controller's setup, a webhook's
// handler, a command's run, its options, its infrastructure) imports the module
// behind it when called, `async (...) => (await import('./controller.ts')).f(...)`.
// Why: the operator then loads only the controllers it runs (--controllers, or
// those not unavailable) and a command only its own verb's module; importing
// every capability's code cost each process ~5 MiB RSS and ~0.2 s (bench/footprint.ts).

import type { AnyCustomResource } from './api/index.ts';
import type { CommandSpec } from './cli/command.ts';
import type { SimulatedInfrastructure } from './cluster/infra/index.ts';
import type { KubeClient } from './runtime/client.ts';
import type { ControllerHost } from './runtime/host.ts';
import type { Logger } from './runtime/log.ts';
import type { PolicyRule } from './runtime/policy-rule.ts';
import type { AdmissionHandler } from './runtime/webhook.ts';
import type { AdmissionWebhookRule } from './runtime/webhook-config.ts';

export type { CommandSpec };

/** One `nodewarden operator` flag a capability owns, e.g. --maintenance-lease-namespace. */
export interface OperatorFlag {
  /** Without the dashes. */
  name: string;
  type: 'string' | 'boolean';
  /** What --help shows after the flag, e.g. "NS" (string flags). */
  placeholder?: string;
  /** One or more lines for --help. */
  help: string;
  /** Read when the flag is not given. */
  env?: string;
  default?: string | boolean;
}

/** The parsed values of a capability's own flags. */
export type FlagValues = Readonly<Record<string, string | boolean | undefined>>;

/** What a capability may use to turn its flags into options (finding a cloud endpoint, say). */
export interface OptionsContext {
  client: KubeClient;
  /** The operator's namespace. */
  namespace: string;
  log: Logger;
  /** Where the operator runs: in a pod (its service account), or on a host, whose loopback a pod cannot reach. */
  runsIn: 'pod' | 'host';
}

/** A controller as the operator runs it: its name for --controllers, its RBAC, its wiring. */
export interface ControllerSpec<O> {
  name: string;
  description: string;
  /** Everything it needs; `make manifests` merges these into the manager's ClusterRole. */
  rbac: readonly PolicyRule[];
  /**
   * Why it cannot run with these options (e.g. "needs a cloud: give --cloud-provider"),
   * or undefined when it can. Unavailable controllers are skipped unless named in
   * --controllers, where they are an error.
   */
  unavailable?(options: O): string | undefined;
  /**
   * Wires the controller; it gets the manager's narrow ControllerHost view, never the Manager.
   * Imports the controller's module here (`await import(...)`), not at the top of capability.ts.
   */
  setup(host: ControllerHost, options: O): void | Promise<void>;
}

/** A validating admission webhook the operator serves while the capability runs. */
export interface WebhookSpec {
  /** A qualified name, unique in the configuration, e.g. vnodemaintenance.maintenance.nodewarden.dev. */
  name: string;
  /** The HTTPS path it answers on. */
  path: string;
  rules: readonly AdmissionWebhookRule[];
  /**
   * Builds the handler; informers it asks the cache for are started and synced by the manager.
   * May import the webhook's module on demand, like a controller's setup.
   */
  handler(host: ControllerHost): AdmissionHandler | Promise<AdmissionHandler>;
}

/**
 * One implementation of something a capability talks to outside the cluster
 * (a cloud, a BMC protocol, a hypervisor), picked by name with one of the
 * capability's flags. Real clouds plug in as further factories.
 */
export interface ProviderFactory<P> {
  /** What it provides: "cloud", "bmc", … */
  kind: string;
  /** The value that picks it, e.g. --cloud-provider simulated. */
  name: string;
  summary: string;
  /** Builds it from the capability's flags; undefined stands for "none". */
  create(flags: FlagValues, ctx: OptionsContext): Promise<P | undefined>;
  /** What it reads and writes in the cluster, when it talks to the API server (merged into the manager's ClusterRole). */
  rbac?: readonly PolicyRule[];
}

export interface Capability<O = unknown> {
  /** Short and lower-case: maintenance, upgrade, … */
  name: string;
  /** The custom resources it ships (CRDs in config/ and the chart). */
  customResources: readonly AnyCustomResource[];
  /** Its own `nodewarden operator` flags, parsed into its own options. */
  flags?: readonly OperatorFlag[];
  /** Its options from its flags; absent when it has none. */
  options?(flags: FlagValues, ctx: OptionsContext): Promise<O>;
  controllers: readonly ControllerSpec<O>[];
  webhooks?: readonly WebhookSpec[];
  /** The implementations its options may be built with, by kind (listed in the operator's help). */
  providers?: readonly ProviderFactory<unknown>[];
  /** Its `nodewarden <name>` commands; each `run` imports the command's module when it runs. */
  commands?: readonly CommandSpec[];
  /**
   * Simulated infrastructure every local cluster carries for it (a cloud, BMCs, a hypervisor),
   * imported on demand: `infrastructure: async () => [(await import('../cluster/infra/x/addon.ts')).simulatedX]`.
   * Only `nodewarden cluster`, the simulators' consoles and the test harness ask for it.
   */
  infrastructure?(): Promise<readonly SimulatedInfrastructure[]>;
}

/**
 * A capability whose options are its own business: the list holds capabilities
 * of different option types, and only each capability's own functions see them.
 */
// biome-ignore lint/suspicious/noExplicitAny: options are opaque outside the capability that defines them.
export type AnyCapability = Capability<any>;
