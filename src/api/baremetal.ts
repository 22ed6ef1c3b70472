// metal3.io/v1alpha1 BareMetalHost: the ecosystem's own kind for one physical
// machine and its BMC, so hosts written for metal3 work here unchanged and a
// real metal3 installation's hosts are read the same way. This is nodewarden's
// structural definition of the fields it reads or writes; every other field is
// preserved (x-kubernetes-preserve-unknown-fields), so a host written for
// metal3's full schema round-trips. Installed only where the cluster has no
// metal3 CRD of its own (make install and the chart check).
// Parity anchor: metal3-io/baremetal-operator's BareMetalHost, see
// ../shared/reference/baremetal.md §4.
import Type from 'typebox';
import { defineCustomResource, type ResourceOf } from './crd.ts';
import { BareMetalHostKind } from './kinds.ts';

export { RACK_LABEL, REBOOT_ANNOTATION } from './kinds.ts';

export const METAL3_GROUP = BareMetalHostKind.group;

const KEEP = { 'x-kubernetes-preserve-unknown-fields': true } as const;

export const BMCDetails = Type.Object(
  {
    address: Type.String({
      description:
        'The BMC in metal3 URL form: redfish://HOST[:PORT]/redfish/v1/Systems/ID, ' +
        'redfish+http://…, redfish+https://…, redfish-virtualmedia://….',
      minLength: 1,
      maxLength: 2048,
    }),
    credentialsName: Type.String({
      description: 'A Secret in the host\'s namespace with keys "username" and "password".',
      minLength: 1,
      maxLength: 253,
    }),
    disableCertificateVerification: Type.Optional(
      Type.Boolean({ description: "Accept the BMC's certificate without checking it (self-signed BMCs)." }),
    ),
  },
  KEEP,
);

const SecretReference = Type.Object(
  {
    name: Type.String({ maxLength: 253 }),
    namespace: Type.Optional(Type.String({ maxLength: 63 })),
  },
  KEEP,
);

export const HostImage = Type.Object(
  {
    url: Type.String({
      description: 'The image to write to the root device.',
      minLength: 1,
      maxLength: 2048,
    }),
    checksum: Type.Optional(Type.String()),
    checksumType: Type.Optional(Type.String()),
    format: Type.Optional(Type.String()),
  },
  KEEP,
);

export const BareMetalHostSpec = Type.Object(
  {
    bmc: Type.Optional(BMCDetails),
    bootMACAddress: Type.Optional(
      Type.String({
        description: 'The MAC of the NIC the host boots from, e.g. 52:54:00:12:34:56.',
        maxLength: 17,
        pattern: '^([0-9a-fA-F]{2}[:-]){5}[0-9a-fA-F]{2}$',
      }),
    ),
    online: Type.Optional(Type.Boolean({ description: 'Whether the host should be powered on.' })),
    image: Type.Optional(HostImage),
    networkData: Type.Optional(SecretReference),
    userData: Type.Optional(SecretReference),
    rootDeviceHints: Type.Optional(Type.Object({}, KEEP)),
    consumerRef: Type.Optional(Type.Object({}, KEEP)),
    externallyProvisioned: Type.Optional(Type.Boolean()),
    description: Type.Optional(Type.String()),
  },
  KEEP,
);

/** metal3's provisioning states that nodewarden's host controller moves through. */
export const ProvisioningStates = [
  '',
  'unmanaged',
  'registering',
  'inspecting',
  'available',
  'provisioning',
  'provisioned',
  'deprovisioning',
  'externally provisioned',
  'deleting',
] as const;
export type ProvisioningState = (typeof ProvisioningStates)[number];

/** metal3's error types (the ones nodewarden sets). */
export type HostErrorType =
  | 'registration error'
  | 'inspection error'
  | 'provisioning error'
  | 'power management error'
  | '';

export type OperationalStatus = 'OK' | 'discovered' | 'error' | 'detached' | '';

const Nic = Type.Object(
  {
    name: Type.Optional(Type.String()),
    mac: Type.Optional(Type.String()),
    ip: Type.Optional(Type.String()),
    speedGbps: Type.Optional(Type.Integer()),
  },
  KEEP,
);

export const HardwareDetails = Type.Object(
  {
    cpu: Type.Optional(
      Type.Object(
        {
          count: Type.Optional(Type.Integer()),
          model: Type.Optional(Type.String()),
          arch: Type.Optional(Type.String()),
        },
        KEEP,
      ),
    ),
    ramMebibytes: Type.Optional(Type.Integer()),
    nics: Type.Optional(Type.Array(Nic)),
    storage: Type.Optional(Type.Array(Type.Object({}, KEEP))),
    systemVendor: Type.Optional(Type.Object({}, KEEP)),
    hostname: Type.Optional(Type.String()),
  },
  KEEP,
);

export const BareMetalHostStatus = Type.Object(
  {
    provisioning: Type.Optional(
      Type.Object(
        {
          state: Type.Optional(Type.String()),
          ID: Type.Optional(Type.String()),
          image: Type.Optional(HostImage),
        },
        KEEP,
      ),
    ),
    poweredOn: Type.Optional(Type.Boolean()),
    operationalStatus: Type.Optional(Type.String()),
    errorType: Type.Optional(Type.String()),
    errorMessage: Type.Optional(Type.String()),
    errorCount: Type.Optional(Type.Integer()),
    hardware: Type.Optional(HardwareDetails),
    lastUpdated: Type.Optional(Type.String({ format: 'date-time' })),
    goodCredentials: Type.Optional(
      Type.Object(
        {
          credentials: Type.Optional(SecretReference),
          credentialsVersion: Type.Optional(Type.String()),
        },
        KEEP,
      ),
    ),
  },
  KEEP,
);

export const BareMetalHosts = defineCustomResource({
  ...BareMetalHostKind,
  singular: 'baremetalhost',
  shortNames: ['bmh', 'bmhost'],
  categories: ['nodewarden'],
  description:
    'A physical machine and its BMC (metal3.io). Structural definition of the fields nodewarden uses; ' +
    'the rest is preserved.',
  spec: BareMetalHostSpec,
  status: BareMetalHostStatus,
  printerColumns: [
    {
      name: 'State',
      type: 'string',
      jsonPath: '.status.provisioning.state',
      description: 'Provisioning state',
    },
    { name: 'Consumer', type: 'string', jsonPath: '.spec.consumerRef.name' },
    { name: 'Online', type: 'boolean', jsonPath: '.spec.online' },
    { name: 'Powered', type: 'boolean', jsonPath: '.status.poweredOn' },
    { name: 'Error', type: 'string', jsonPath: '.status.errorType' },
  ],
});

export type BareMetalHost = ResourceOf<typeof BareMetalHosts>;
export type BareMetalHostSpecType = BareMetalHost['spec'];
export type BareMetalHostStatusType = NonNullable<BareMetalHost['status']>;
