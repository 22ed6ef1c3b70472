// What the webhook refuses at admission and the controller refuses before it
// touches a node: one parser for podSelector, one check of the whole spec.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parsePodSelector } from '../../../src/drain/selector.ts';
import { describeProblems, validateMaintenanceSpec } from '../../../src/maintenance/spec.ts';

describe('parsePodSelector', () => {
  const refused: [string, RegExp][] = [
    ['app in ((', /bad key "app in \(\("/],
    ['app in (a', /bad key "app in \(a"/],
    ['app=web,', /empty requirement/],
    ['=web', /bad key "=web"/],
    ['a=b=c', /bad key "a=b=c"/],
    ['app in ()', /"app in \(…\)" needs at least one value/],
    ['tier notin ( )', /"tier notin \(…\)" needs at least one value/],
    ['app=-web', /value "-web"/],
    [`app=${'x'.repeat(64)}`, /value "x{64}": must be at most 63/],
    [`${'k'.repeat(64)}=v`, /the name must be 1 to 63/],
    ['Example.COM/app=web', /the prefix before "\/" must be a lowercase DNS subdomain/],
    ['/app=web', /bad key "\/app"/],
    ['app/=web', /bad key "app\/"/],
  ];
  for (const [selector, why] of refused) {
    it(`refuses ${JSON.stringify(selector)}, saying why and how a selector is written`, () => {
      const got = parsePodSelector(selector);
      assert.equal(got.ok, false);
      if (got.ok) return;
      assert.match(got.message, why);
      assert.ok(got.message.startsWith(`podSelector "${selector}" is not a label selector: `), got.message);
      assert.match(got.message, /e\.g\. "app=web"/);
    });
  }

  const accepted: [string | undefined, number][] = [
    [undefined, 0],
    ['', 0],
    ['   ', 0],
    ['app=web', 1],
    ['app==web,tier!=db', 2],
    ['tier in (a, b),!canary,release', 3],
    ['example.com/app notin (x)', 1],
    ['app=', 1],
  ];
  for (const [selector, requirements] of accepted) {
    it(`accepts ${JSON.stringify(selector)} (${requirements} requirements)`, () => {
      const got = parsePodSelector(selector);
      assert.ok(got.ok, got.ok ? '' : got.message);
      assert.equal(got.selector?.length ?? 0, requirements);
    });
  }
});

describe('validateMaintenanceSpec', () => {
  const ok = { nodeName: 'worker-0' };
  it('accepts a spec with only a node name, and one with every field set well', () => {
    assert.deepEqual(validateMaintenanceSpec(ok), []);
    assert.deepEqual(
      validateMaintenanceSpec({
        nodeName: 'worker-0.zone-a',
        reason: 'disk',
        timeout: '1h30m',
        gracePeriodSeconds: -1,
        podSelector: 'app=web',
        deleteEmptyDirData: false,
        evictUnmanagedPods: false,
        ignoreDaemonSets: false,
        taints: [{ key: 'example.com/repair', value: 'disk', effect: 'NoExecute' }],
      }),
      [],
    );
  });

  // [what, spec fields, the field named, what the message says]
  const cases: [string, Record<string, unknown>, string, RegExp][] = [
    ['no node name', { nodeName: '' }, 'spec.nodeName', /is required/],
    ['a node name that is no DNS name', { nodeName: 'Worker_0' }, 'spec.nodeName', /not a node name/],
    [
      'a podSelector that does not parse',
      { podSelector: 'app in ((' },
      'spec.podSelector',
      /not a label selector/,
    ],
    [
      'an oversized podSelector',
      { podSelector: `a=${'b'.repeat(1100)}` },
      'spec.podSelector',
      /at most 1024/,
    ],
    [
      'a podSelector of the wrong type',
      { podSelector: 7 },
      'spec.podSelector',
      /must be a label selector string/,
    ],
    [
      'a timeout that is no duration',
      { timeout: '10 minutes' },
      'spec.timeout',
      /"10 minutes" must be a duration/,
    ],
    ['a timeout of the wrong type', { timeout: 600 }, 'spec.timeout', /must be a duration/],
    ['a grace period below -1', { gracePeriodSeconds: -2 }, 'spec.gracePeriodSeconds', /from -1/],
    ['a grace period above a day', { gracePeriodSeconds: 86401 }, 'spec.gracePeriodSeconds', /to 86400/],
    ['a fractional grace period', { gracePeriodSeconds: 1.5 }, 'spec.gracePeriodSeconds', /whole number/],
    ['a flag that is no boolean', { ignoreDaemonSets: 'yes' }, 'spec.ignoreDaemonSets', /true or false/],
    ['an oversized reason', { reason: 'r'.repeat(1025) }, 'spec.reason', /at most 1024/],
    ['taints that are no list', { taints: {} }, 'spec.taints', /must be a list/],
    ['a taint without key', { taints: [{ effect: 'NoSchedule' }] }, 'spec.taints[0].key', /is required/],
    [
      'a taint key with a space',
      { taints: [{ key: 'a b', effect: 'NoSchedule' }] },
      'spec.taints[0].key',
      /name must be/,
    ],
    [
      'a taint value too long',
      { taints: [{ key: 'a', value: 'v'.repeat(64), effect: 'NoSchedule' }] },
      'spec.taints[0].value',
      /at most 63/,
    ],
    [
      'an unknown taint effect',
      { taints: [{ key: 'a', effect: 'NoWay' }] },
      'spec.taints[0].effect',
      /"NoWay" must be one of NoSchedule, PreferNoSchedule, NoExecute/,
    ],
    [
      'a taint given twice',
      {
        taints: [
          { key: 'a', effect: 'NoSchedule' },
          { key: 'a', value: 'x', effect: 'NoSchedule' },
        ],
      },
      'spec.taints[1]',
      /given twice/,
    ],
    [
      'the drain taint the maintenance adds itself',
      { taints: [{ key: 'nodewarden.dev/drain', effect: 'NoSchedule' }] },
      'spec.taints[0]',
      /puts on the node itself/,
    ],
    [
      'more than 16 taints',
      { taints: Array.from({ length: 17 }, (_, i) => ({ key: `k${i}`, effect: 'NoSchedule' })) },
      'spec.taints',
      /at most 16/,
    ],
  ];
  for (const [what, fields, field, message] of cases) {
    it(`refuses ${what}, naming ${field}`, () => {
      const problems = validateMaintenanceSpec({ ...ok, ...fields } as never);
      assert.equal(problems.length, 1, describeProblems(problems));
      assert.equal(problems[0]?.field, field);
      assert.match(problems[0]?.message ?? '', message);
    });
  }

  it('reports every problem at once, one line naming each field', () => {
    const problems = validateMaintenanceSpec({
      nodeName: 'w',
      podSelector: 'app in ((',
      timeout: 'soon',
    } as never);
    assert.deepEqual(
      problems.map((p) => p.field),
      ['spec.timeout', 'spec.podSelector'],
    );
    assert.match(
      describeProblems(problems),
      /^spec\.timeout: "soon" .*; spec\.podSelector: podSelector "app in \(\(" /,
    );
  });
});
