import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  errorBackoffMs,
  errorTypeFor,
  type HostObservation,
  type HostPlan,
  planHost,
} from '../../../../src/baremetal/hosts/planner.ts';

const observe = (o: Partial<HostObservation>): HostObservation => ({
  state: 'available',
  online: true,
  externallyProvisioned: false,
  image: undefined,
  provisionedImage: undefined,
  recordedPower: true,
  power: 'On',
  rebootRequested: false,
  ...o,
});

const rows: [string, Partial<HostObservation>, HostPlan][] = [
  [
    'a new host whose BMC answered is registered, then inspected',
    { state: '' },
    { state: 'inspecting', steps: [], soon: true },
  ],
  [
    'a host that was unmanaged and got a BMC registers',
    { state: 'unmanaged' },
    { state: 'inspecting', steps: [], soon: true },
  ],
  [
    'inspection reads the hardware and makes the host available',
    { state: 'inspecting' },
    { state: 'available', steps: [{ kind: 'inspect' }], soon: true },
  ],
  [
    'inspection of an externally provisioned host ends there',
    { state: 'inspecting', externallyProvisioned: true },
    { state: 'externally provisioned', steps: [{ kind: 'inspect' }], soon: true },
  ],
  [
    'an available host already as online says is left alone',
    {},
    { state: 'available', steps: [], soon: false },
  ],
  [
    'an available host asked to go offline is powered off (spec)',
    { online: false, recordedPower: true },
    { state: 'available', steps: [{ kind: 'power', on: false, cause: 'spec' }], soon: true },
  ],
  [
    'a host switched off at the BMC behind our back is drift, powered on again',
    { power: 'Off', recordedPower: true, online: true },
    { state: 'available', steps: [{ kind: 'power', on: true, cause: 'drift' }], soon: true },
  ],
  [
    'a host switched on at the BMC while it should be off is drift too',
    { power: 'On', recordedPower: false, online: false },
    { state: 'available', steps: [{ kind: 'power', on: false, cause: 'drift' }], soon: true },
  ],
  [
    'a new host (nothing recorded) powered to match the spec is not drift',
    { power: 'Off', recordedPower: undefined, online: true },
    { state: 'available', steps: [{ kind: 'power', on: true, cause: 'spec' }], soon: true },
  ],
  [
    'a power transition under way is waited for',
    { power: 'PoweringOn', online: true },
    { state: 'available', steps: [], soon: true },
  ],
  [
    'an unknown power reading is waited for, not acted on',
    { power: 'Unknown' },
    { state: 'available', steps: [], soon: true },
  ],
  [
    'a reboot request restarts a host that should be on',
    { rebootRequested: true },
    { state: 'available', steps: [{ kind: 'reboot' }], soon: true },
  ],
  [
    'a reboot request on a host that should be off does not power it on',
    { rebootRequested: true, online: false, power: 'Off', recordedPower: false },
    { state: 'available', steps: [], soon: false },
  ],
  [
    'an image on an available host starts provisioning',
    { image: 'http://img/os.iso' },
    { state: 'provisioning', steps: [], soon: true },
  ],
  [
    'provisioning writes the image and the host is provisioned',
    { state: 'provisioning', image: 'http://img/os.iso' },
    { state: 'provisioned', steps: [{ kind: 'provision', image: 'http://img/os.iso' }], soon: true },
  ],
  [
    'an image removed while provisioning deprovisions',
    { state: 'provisioning' },
    { state: 'deprovisioning', steps: [], soon: true },
  ],
  [
    'a provisioned host keeps its power on spec.online',
    { state: 'provisioned', image: 'a', provisionedImage: 'a', power: 'Off', recordedPower: true },
    { state: 'provisioned', steps: [{ kind: 'power', on: true, cause: 'drift' }], soon: true },
  ],
  [
    'removing the image deprovisions',
    { state: 'provisioned', provisionedImage: 'a' },
    { state: 'deprovisioning', steps: [], soon: true },
  ],
  [
    'a new image deprovisions first, as metal3 does',
    { state: 'provisioned', image: 'b', provisionedImage: 'a' },
    { state: 'deprovisioning', steps: [], soon: true },
  ],
  [
    'deprovisioning ejects and powers off, back to available',
    { state: 'deprovisioning' },
    { state: 'available', steps: [{ kind: 'deprovision' }], soon: true },
  ],
  [
    'externally provisioned is left alone but for its power',
    {
      state: 'externally provisioned',
      externallyProvisioned: true,
      online: false,
      power: 'On',
      recordedPower: true,
    },
    { state: 'externally provisioned', steps: [{ kind: 'power', on: false, cause: 'spec' }], soon: true },
  ],
  [
    'a state another controller set starts over from registration',
    { state: 'match profile' },
    { state: 'registering', steps: [], soon: true },
  ],
  [
    'a disk image (qcow2) is refused, the host left available: writing to disk needs Ironic',
    { image: 'http://x/os.qcow2', imageFormat: 'qcow2' },
    {
      state: 'available',
      steps: [],
      soon: false,
      refused: { cause: 'diskImageNeedsIronic', format: 'qcow2' },
    },
  ],
  [
    'a raw image met while provisioning is refused there',
    { state: 'provisioning', image: 'http://x/os.img', imageFormat: 'RAW' },
    {
      state: 'provisioning',
      steps: [],
      soon: false,
      refused: { cause: 'diskImageNeedsIronic', format: 'raw' },
    },
  ],
  [
    'a live-iso image is booted by virtual media',
    { state: 'provisioning', image: 'http://x/live.iso', imageFormat: 'live-iso' },
    { state: 'provisioned', steps: [{ kind: 'provision', image: 'http://x/live.iso' }], soon: true },
  ],
];

describe('planHost: the next state and steps of a host whose BMC answered', () => {
  for (const [name, o, plan] of rows) {
    it(name, () => assert.deepEqual(planHost(observe(o)), plan));
  }
});

describe("metal3's error types", () => {
  it('a failed power action is a power management error in any state', () => {
    assert.equal(errorTypeFor('provisioned', 'power'), 'power management error');
    assert.equal(errorTypeFor('available', 'reboot'), 'power management error');
  });
  it('a failure while inspecting is an inspection error', () => {
    assert.equal(errorTypeFor('inspecting', 'inspect'), 'inspection error');
  });
  it('failures writing or removing an image are provisioning errors', () => {
    assert.equal(errorTypeFor('provisioning', 'provision'), 'provisioning error');
    assert.equal(errorTypeFor('deprovisioning', 'deprovision'), 'provisioning error');
  });
  it('a BMC that cannot be read while registering is a registration error', () => {
    assert.equal(errorTypeFor('registering', 'read'), 'registration error');
  });
});

describe('retry backoff after BMC failures', () => {
  it('doubles from 2 s and stops at 5 minutes', () => {
    assert.deepEqual([1, 2, 3, 4].map(errorBackoffMs), [2_000, 4_000, 8_000, 16_000]);
    assert.equal(errorBackoffMs(20), 300_000);
  });
});
