// BareMetalHostReconciler: registers a host through its BMC, inspects it,
// keeps its power on spec.online, provisions and deprovisions spec.image over
// Redfish virtual media — metal3's state machine (planner.ts decides each
// step) for clusters without metal3's own operator. Nobody watches a BMC, so
// every host is read again every resync: power switched at the BMC behind
// our back is noticed, reported and corrected within one resync.
import type { V1Secret } from '@kubernetes/client-node';
import {
  type BareMetalHost,
  type BareMetalHostStatusType,
  BareMetalHosts,
  REBOOT_ANNOTATION,
} from '../../api/baremetal.ts';
import type { KubeClient } from '../../runtime/client.ts';
import type { EventRecorder } from '../../runtime/events.ts';
import { isBeingDeleted, patchFinalizer } from '../../runtime/finalizers.ts';
import {
  type CacheReader,
  type ControllerHost,
  type ReconcilerDeps,
  reconcilerDeps,
} from '../../runtime/host.ts';
import {
  annotationsChanged,
  anyOf,
  deletionOrFinalizersChanged,
  generationChanged,
} from '../../runtime/predicates.ts';
import {
  done,
  type ReconcileContext,
  type Request,
  type Result,
  requeueAfter,
} from '../../runtime/reconcile.ts';
import { type K8sObject, Secrets } from '../../runtime/resources.ts';
import { saveStatus, statusEqual } from '../../runtime/status.ts';
import { BmcAddressError, redfishAddress } from '../redfish/address.ts';
import { BmcError, RedfishClient, type SystemInfo } from '../redfish/client.ts';
import {
  CREDENTIALS_LABEL,
  CREDENTIALS_LABEL_VALUE,
  CredentialsError,
  CredentialsStore,
} from './credentials.ts';
import { ChecksumError } from './image-checksum.ts';
import { bmcErrors } from './metrics.ts';
import {
  errorBackoffMs,
  errorTypeFor,
  type HostObservation,
  type HostStep,
  type PowerReading,
  planHost,
  type Refusal,
} from './planner.ts';
import { carryOut } from './steps.ts';

const BMH = BareMetalHosts.type;
/** metal3's own finalizer name, so a host handed over between the two operators keeps one. */
export const HOST_FINALIZER = 'baremetalhost.metal3.io';
/** A state just entered, or a power transition under way: look again this soon. */
const SOON_MS = 1_000;

type HostObject = BareMetalHost & K8sObject;

// Declared with the capability (../rbac.ts); named here too for the suites that wire this controller.
export { hostControllerRbac } from '../rbac.ts';

export interface HostControllerOptions {
  resyncMs: number;
}

/** Index of hosts by the Secret that holds their BMC credentials ("namespace/name"). */
const BY_CREDENTIALS = 'bmc-credentials';

/** The credentials Secret a host names, as BY_CREDENTIALS keys it. */
export function credentialsKey(host: HostObject): string[] {
  const name = host.spec.bmc?.credentialsName;
  return name ? [`${host.metadata.namespace ?? 'default'}/${name}`] : [];
}

export function setupBareMetalHosts(host: ControllerHost, opts: HostControllerOptions): void {
  const r = new BareMetalHostReconciler(reconcilerDeps(host, 'nodewarden.dev/baremetalhost'), opts);
  host.cache.addIndex<HostObject>(BMH, BY_CREDENTIALS, credentialsKey);
  host
    .controller('baremetalhost')
    // Our own status writes must not wake us: the resync does that.
    .for(BMH, { predicates: [anyOf(generationChanged, annotationsChanged, deletionOrFinalizersChanged)] })
    // A fixed or rotated credentials Secret re-reconciles its hosts at once, not when the backoff ends.
    .watches(
      Secrets,
      (secret) =>
        host.cache
          .byIndex<HostObject>(BMH, BY_CREDENTIALS, `${secret.metadata?.namespace}/${secret.metadata?.name}`)
          .map((h) => ({ name: h.metadata.name!, namespace: h.metadata.namespace })),
      { labelSelector: `${CREDENTIALS_LABEL}=${CREDENTIALS_LABEL_VALUE}` },
    )
    // BMC calls wait on the network; many workers keep one slow BMC from holding up the fleet.
    .withWorkers(16)
    .complete((req, ctx) => r.reconcile(req, ctx));
}

/** A failure met while registering or acting, with the error type metal3 would record. */
interface Failure {
  errorType: NonNullable<BareMetalHostStatusType['errorType']>;
  message: string;
  credentials: boolean;
}

/** The host's BMC as reached this round. */
interface Reached {
  redfish: RedfishClient;
  system: SystemInfo;
  /** The credentials Secret's resourceVersion. */
  version: string;
}

type Bmc = NonNullable<BareMetalHost['spec']['bmc']>;

export class BareMetalHostReconciler {
  private readonly credentials: CredentialsStore;
  private readonly client: KubeClient;
  private readonly cache: CacheReader;
  private readonly events: EventRecorder;
  private readonly opts: HostControllerOptions;

  constructor(deps: ReconcilerDeps, opts: HostControllerOptions) {
    this.client = deps.client;
    this.cache = deps.cache;
    this.events = deps.events;
    this.opts = opts;
    this.credentials = new CredentialsStore(deps.client, (ns, name) =>
      deps.cache.get<V1Secret & K8sObject>(Secrets, name, ns),
    );
  }

  async reconcile(req: Request, ctx: ReconcileContext): Promise<Result> {
    const host = this.cache.get<HostObject>(BMH, req.name, req.namespace);
    if (!host) return done();
    if (isBeingDeleted(host)) return this.finalize(host);
    if (await patchFinalizer(this.client, BMH, host, HOST_FINALIZER, 'add')) return done(); // back with the new copy
    const bmc = host.spec.bmc;
    // metal3: a host without BMC details is known but not managed.
    if (!bmc?.address) return this.save(host, unmanaged(host.status), done());
    const state = host.status?.provisioning?.state ?? '';
    const reached = await this.reach(host, bmc, state);
    if ('result' in reached) return reached.result;
    const { redfish, system } = reached;

    const plan = planHost(observe(host, system));
    // Only a spec change can lift a refusal, and that wakes us.
    if (plan.refused) return this.fail(host, refusalFailure(plan.refused), 'provision', done());
    const status: BareMetalHostStatusType = {
      ...clearErrors(host.status),
      operationalStatus: 'OK',
      poweredOn: system.powerState === 'On',
      goodCredentials: {
        credentials: { name: bmc.credentialsName, namespace: host.metadata.namespace ?? 'default' },
        credentialsVersion: reached.version,
      },
    };
    const step = { client: this.client, events: this.events, log: ctx.log, host, redfish, system, status };
    for (const s of plan.steps) {
      try {
        await carryOut(step, s);
      } catch (err) {
        return this.fail(host, asFailure(err, s.kind, state), s.kind);
      }
    }
    status.provisioning = { ...host.status?.provisioning, state: plan.state };
    if (plan.state === 'available') delete status.provisioning.image;
    if (state !== plan.state) {
      this.events.normal(host, stateReason(plan.state), 'Reconcile', `${state || 'new'} → ${plan.state}`);
      const via = system.redirectedTo ? { redirectedTo: system.redirectedTo } : {};
      ctx.log.info({ from: state, to: plan.state, ...via }, 'host state changed');
    }
    return this.save(host, status, requeueAfter(plan.soon ? SOON_MS : this.opts.resyncMs));
  }

  /** Reads the host's System at its BMC; a failure is recorded on the host, and its result answered. */
  private async reach(host: HostObject, bmc: Bmc, state: string): Promise<Reached | { result: Result }> {
    let address: ReturnType<typeof redfishAddress>;
    try {
      address = redfishAddress(bmc.address);
    } catch (err) {
      if (!(err instanceof BmcAddressError)) throw err;
      const failure: Failure = { errorType: 'registration error', message: err.message, credentials: false };
      // Only a spec change can fix it, and that wakes us.
      return { result: await this.fail(host, failure, 'read', done()) };
    }
    const registered = !['', 'registering', 'unmanaged'].includes(state) && !host.status?.errorType;
    const ns = host.metadata.namespace ?? 'default';
    try {
      const creds = await this.credentials.get(ns, bmc.credentialsName, !registered);
      const redfish = new RedfishClient({
        address,
        credentials: creds,
        insecure: bmc.disableCertificateVerification === true,
      });
      return { redfish, system: await redfish.system(), version: creds.version };
    } catch (err) {
      const failure = asFailure(err, 'read', state);
      if (failure.credentials) this.credentials.forget(ns, bmc.credentialsName);
      return { result: await this.fail(host, failure, 'read') };
    }
  }

  /** Deletion: a provisioned host is deprovisioned (best effort: a dead BMC must not pin the object). */
  private async finalize(host: HostObject): Promise<Result> {
    const state = host.status?.provisioning?.state;
    const bmc = host.spec.bmc;
    if (bmc?.address && (state === 'provisioned' || state === 'provisioning')) {
      try {
        const creds = await this.credentials.get(
          host.metadata.namespace ?? 'default',
          bmc.credentialsName,
          false,
        );
        const redfish = new RedfishClient({
          address: redfishAddress(bmc.address),
          credentials: creds,
          insecure: bmc.disableCertificateVerification === true,
        });
        const system = await redfish.system();
        await redfish.ejectMedia(system);
        await redfish.reset('ForceOff');
      } catch (err) {
        this.events.warning(
          host,
          'DeprovisioningFailed',
          'Delete',
          `left as it is: ${(err as Error).message}`,
        );
      }
    }
    await patchFinalizer(this.client, BMH, host, HOST_FINALIZER, 'remove');
    return done();
  }

  private async fail(
    host: HostObject,
    f: Failure,
    failed: HostStep['kind'] | 'read',
    result?: Result,
  ): Promise<Result> {
    const count = (host.status?.errorCount ?? 0) + 1;
    bmcErrors.inc({ error_type: f.errorType });
    if (host.status?.errorMessage !== f.message)
      this.events.warning(host, eventReason(f.errorType), failed, f.message);
    const state = host.status?.provisioning?.state || 'registering';
    const status: BareMetalHostStatusType = {
      ...host.status,
      provisioning: { ...host.status?.provisioning, state: state === 'unmanaged' ? 'registering' : state },
      operationalStatus: 'error',
      errorType: f.errorType,
      errorMessage: f.message,
      errorCount: count,
      ...(f.credentials ? { goodCredentials: undefined } : {}),
    };
    return this.save(host, status, result ?? requeueAfter(errorBackoffMs(count)));
  }

  /** Writes status when it changed (lastUpdated with it), so a steady host costs no writes. */
  private async save(host: HostObject, status: BareMetalHostStatusType, result: Result): Promise<Result> {
    if (statusEqual(status, host.status, ['lastUpdated'])) return result;
    const stamped = { ...status, lastUpdated: new Date().toISOString() };
    return saveStatus(this.client, BMH, host, stamped, result);
  }
}

/** What planHost decides from: the host's spec and recorded status, and its BMC's answer. */
function observe(host: HostObject, system: SystemInfo): HostObservation {
  return {
    state: host.status?.provisioning?.state ?? '',
    online: host.spec.online === true,
    externallyProvisioned: host.spec.externallyProvisioned === true,
    image: host.spec.image?.url,
    imageFormat: host.spec.image?.format,
    provisionedImage: host.status?.provisioning?.image?.url,
    recordedPower: host.status?.poweredOn,
    power: reading(system.powerState),
    rebootRequested: host.metadata.annotations?.[REBOOT_ANNOTATION] !== undefined,
  };
}

function refusalFailure(r: Refusal): Failure {
  switch (r.cause) {
    case 'diskImageNeedsIronic':
      return {
        errorType: 'provisioning error',
        message: `image format "${r.format}" is a disk image: writing images to disk needs Ironic (metal3); nodewarden boots live-iso images by virtual media`,
        credentials: false,
      };
  }
}

function unmanaged(status: BareMetalHostStatusType | undefined): BareMetalHostStatusType {
  return { ...clearErrors(status), provisioning: { state: 'unmanaged' }, operationalStatus: 'discovered' };
}

function clearErrors(status: BareMetalHostStatusType | undefined): BareMetalHostStatusType {
  const { errorType: _t, errorMessage: _m, errorCount: _c, ...rest } = status ?? {};
  return rest;
}

function reading(powerState: string): PowerReading {
  return (['On', 'Off', 'PoweringOn', 'PoweringOff'] as const).find((p) => p === powerState) ?? 'Unknown';
}

function asFailure(err: unknown, failed: HostStep['kind'] | 'read', state: string): Failure {
  if (err instanceof CredentialsError)
    return { errorType: 'registration error', message: err.message, credentials: true };
  if (err instanceof ChecksumError)
    return { errorType: 'provisioning error', message: err.message, credentials: false };
  if (!(err instanceof BmcError)) throw err;
  if (err.kind === 'credentials' || err.kind === 'unreachable' || err.kind === 'not-found') {
    return {
      errorType: failed === 'read' ? 'registration error' : errorTypeFor(state, failed),
      message: err.message,
      credentials: err.kind === 'credentials',
    };
  }
  return { errorType: errorTypeFor(state, failed), message: err.message, credentials: false };
}

const eventReason = (t: string) =>
  ({
    'registration error': 'RegistrationError',
    'inspection error': 'InspectionError',
    'provisioning error': 'ProvisioningError',
    'power management error': 'PowerManagementError',
  })[t] ?? 'Error';

function stateReason(state: string): string {
  return `State${state.replace(/(^| )([a-z])/g, (_m, _s, c: string) => c.toUpperCase())}`;
}
