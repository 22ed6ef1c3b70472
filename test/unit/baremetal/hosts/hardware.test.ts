import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { hardwareOf } from '../../../../src/baremetal/hosts/steps.ts';
import type { SystemInfo } from '../../../../src/baremetal/redfish/client.ts';

const system: SystemInfo = { id: 'h', powerState: 'On', memoryMiB: 8192 };

describe("hardware details, as metal3's hardwareDetails have them", () => {
  it('takes the CPU count from the System, and model, arch and clock from the first processor', () => {
    const hw = hardwareOf(
      { ...system, cpuCount: 32, cpuModel: 'summary model' },
      {
        nics: [],
        processors: [
          { model: 'Xeon', arch: 'x86_64', threads: 16, maxSpeedMHz: 3000 },
          { model: 'Xeon', threads: 16 },
        ],
        disks: [],
      },
    );
    assert.deepEqual(hw?.cpu, { count: 32, model: 'Xeon', arch: 'x86_64', clockMegahertz: 3000 });
  });

  it('counts the processors’ threads when the System gives no count, and keeps the summary model without processors', () => {
    const counted = hardwareOf(system, { nics: [], processors: [{ threads: 8 }, { threads: 8 }], disks: [] });
    assert.deepEqual(counted?.cpu, { count: 16 });
    const summary = hardwareOf(
      { ...system, cpuCount: 4, cpuModel: 'm' },
      { nics: [], processors: [], disks: [] },
    );
    assert.deepEqual(summary?.cpu, { count: 4, model: 'm' });
    assert.equal(hardwareOf(system, { nics: [], processors: [], disks: [] })?.cpu, undefined);
  });

  it('lists every disk with what the BMC said of it', () => {
    const disk = { name: 'Disk0', sizeBytes: 480e9, model: 'SSD', serialNumber: 'S1', rotational: false };
    const hw = hardwareOf(system, { nics: [], processors: [], disks: [disk, { name: 'Disk1' }] });
    assert.deepEqual(hw?.storage, [disk, { name: 'Disk1' }]);
  });
});
