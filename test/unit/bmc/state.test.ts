import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  BmcState,
  BmcStateError,
  machineView,
  type ResetType,
} from '../../../src/cluster/infra/bmc/state.ts';
import { spec } from './fixtures.ts';

const rejectsWith = (status: number) => (err: unknown) =>
  err instanceof BmcStateError && err.status === status;

describe('defining machines', () => {
  it('creates a machine switched off, and takes the same spec again as a no-op', () => {
    const s = new BmcState();
    assert.equal(s.define(spec('a')).created, true);
    assert.equal(s.get('a')?.power, 'Off');
    assert.equal(s.define(spec('a')).created, false);
    assert.equal(s.records().length, 1);
  });

  it('refuses another spec under a taken id with 409, and keeps the first', () => {
    const s = new BmcState();
    s.define(spec('a'));
    assert.throws(() => s.define(spec('a', { cpus: 64 })), rejectsWith(409));
    assert.equal(s.get('a')?.spec.cpus, 16);
  });

  it('refuses a MAC another machine has with 409', () => {
    const s = new BmcState();
    s.define(spec('a'));
    assert.throws(() => s.define({ ...spec('b'), nics: spec('a').nics }), /belongs to machine "a"/);
  });

  for (const [what, bad] of [
    ['an id that is no DNS label', { id: 'Bad_Id' }],
    ['no NICs', { nics: [] }],
    ['a malformed MAC', { nics: [{ name: 'eno1', mac: '02:00:00:00:00' }] }],
    ['zero CPUs', { cpus: 0 }],
    ['an unknown kind', { kind: 'container' }],
    ['no password', { credentials: { username: 'admin', password: '' } }],
  ] as const) {
    it(`refuses ${what} with 400 and defines nothing`, () => {
      const s = new BmcState();
      assert.throws(() => s.define({ ...spec('a'), ...bad }), rejectsWith(400));
      assert.equal(s.records().length, 0);
    });
  }

  it('lower-cases MACs, so a spec written either way is the same machine', () => {
    const s = new BmcState();
    s.define({ ...spec('a'), nics: [{ name: 'eno1', mac: '02:AB:00:00:00:01' }] });
    assert.equal(
      s.define({ ...spec('a'), nics: [{ name: 'eno1', mac: '02:ab:00:00:00:01' }] }).created,
      false,
    );
  });
});

describe('power', () => {
  const cases: { from: 'On' | 'Off'; reset: ResetType; to: string; boots: number }[] = [
    { from: 'Off', reset: 'On', to: 'On', boots: 1 },
    { from: 'On', reset: 'On', to: 'On', boots: 1 },
    { from: 'On', reset: 'ForceOff', to: 'Off', boots: 1 },
    { from: 'On', reset: 'GracefulShutdown', to: 'Off', boots: 1 },
    { from: 'Off', reset: 'ForceOff', to: 'Off', boots: 0 },
    { from: 'On', reset: 'GracefulRestart', to: 'On', boots: 2 },
    { from: 'On', reset: 'ForceRestart', to: 'On', boots: 2 },
    { from: 'Off', reset: 'ForceRestart', to: 'On', boots: 1 },
  ];
  for (const c of cases) {
    it(`${c.reset} from ${c.from} reads ${c.to} (${c.boots} boots in all)`, () => {
      const s = new BmcState();
      s.define(spec('a'));
      if (c.from === 'On') s.setPower('a', 'On', 0);
      const m = s.reset('a', c.reset, 0);
      assert.equal(m.power, c.to);
      assert.equal(m.boots, c.boots);
    });
  }

  it('reads PoweringOn until the power-on delay has passed', () => {
    const s = new BmcState();
    s.define(spec('a'));
    s.setFaults({ powerOnDelayMs: 1000 });
    s.reset('a', 'On', 5000);
    assert.equal(s.get('a')?.power, 'PoweringOn');
    s.tick(5999);
    assert.equal(s.get('a')?.power, 'PoweringOn');
    s.tick(6000);
    assert.equal(s.get('a')?.power, 'On');
  });

  it('fails Reset with 500 on a machine with failPower, and leaves its power alone', () => {
    const s = new BmcState();
    s.define(spec('a'));
    s.define(spec('b'));
    s.setFaults({ failPower: ['a'] });
    assert.throws(() => s.reset('a', 'On', 0), rejectsWith(500));
    assert.equal(s.get('a')?.power, 'Off');
    assert.equal(s.reset('b', 'On', 0).power, 'On');
  });

  it('lets the console switch a machine whatever its faults', () => {
    const s = new BmcState();
    s.define(spec('a'));
    s.setFaults({ failPower: ['*'] });
    assert.equal(s.setPower('a', 'On', 0).power, 'On');
    assert.equal(s.setPower('a', 'Off', 0).power, 'Off');
  });

  it('boots once from a one-time override, then from disk', () => {
    const s = new BmcState();
    s.define(spec('a'));
    s.setBoot('a', { target: 'Cd', enabled: 'Once' });
    assert.equal(machineView(s.get('a')!, 'h:1').bootOverride, 'Cd');
    s.reset('a', 'On', 0);
    assert.equal(s.get('a')?.lastBootTarget, 'Cd');
    assert.equal(machineView(s.get('a')!, 'h:1').bootOverride, undefined);
    s.reset('a', 'ForceRestart', 0);
    assert.equal(s.get('a')?.lastBootTarget, 'Hdd');
  });

  it('refuses a boot target it does not know with 400 naming the allowed ones', () => {
    const s = new BmcState();
    s.define(spec('a'));
    assert.throws(() => s.setBoot('a', { target: 'Floppy' }), /not one of None, Pxe, Cd, Hdd, BiosSetup/);
  });
});

describe('faults', () => {
  it('refuses an unknown key and sets nothing', () => {
    const s = new BmcState();
    assert.throws(
      () => s.setFaults({ unreachable: ['a'], unreachble: ['b'] } as never),
      /unknown fault "unreachble"/,
    );
    assert.deepEqual(s.getFaults().unreachable, []);
  });

  it('applies "*" to every machine', () => {
    const s = new BmcState();
    s.setFaults({ vanished: ['*'] });
    assert.equal(s.hasFault('vanished', 'anything'), true);
    assert.equal(s.hasFault('unreachable', 'anything'), false);
  });

  it('replaces a list given, keeps the others', () => {
    const s = new BmcState();
    s.setFaults({ unreachable: ['a'], failPower: ['b'] });
    s.setFaults({ unreachable: ['c'] });
    assert.deepEqual([s.getFaults().unreachable, s.getFaults().failPower], [['c'], ['b']]);
  });
});

describe('snapshot', () => {
  it('restores machines, power, media and faults as they were', () => {
    const s = new BmcState();
    s.define(spec('a'));
    s.reset('a', 'On', 0);
    s.insertMedia('a', 'http://images/x.iso');
    s.setFaults({ badCredentials: ['a'], powerOnDelayMs: 10 });
    const back = BmcState.restore(JSON.parse(JSON.stringify(s.snapshot())));
    assert.deepEqual(back.snapshot(), s.snapshot());
    assert.equal(back.get('a')?.virtualMedia, 'http://images/x.iso');
  });

  it('tells its listeners of every change', () => {
    const s = new BmcState();
    let changes = 0;
    s.onChange(() => changes++);
    s.define(spec('a'));
    s.reset('a', 'On', 0);
    s.setFaults({ powerOnDelayMs: 5 });
    assert.equal(changes, 3);
  });
});
