// Bad input at the NodeMaintenance door, against the real API server and the
// CRD's own schema (no webhook, no operator): each field tried with a wrong
// type, an out-of-range or unknown value, an oversized string or list. Each is
// refused with a message naming the field, and nothing is created.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, describe, it } from 'node:test';
import { NodeMaintenances } from '../../src/api/maintenance.ts';
import { KubeClient } from '../../src/runtime/client.ts';
import { ApiError } from '../../src/runtime/errors.ts';
import { testKubeConfig } from '../harness/cluster.ts';

const NM = NodeMaintenances.type;
const RUN = randomBytes(4).toString('hex');
const LABEL = 'nodewarden.dev/test-crd-input';
const client = KubeClient.fromKubeConfig(testKubeConfig());

const taint = (o: Record<string, unknown> = {}) => ({
  key: 'example.com/repair',
  effect: 'NoSchedule',
  ...o,
});

// [what, spec (replacing the good one's fields), the message naming the field and what is wrong]
const cases: [string, Record<string, unknown> | undefined, RegExp][] = [
  ['no spec at all', undefined, /spec: Required value/],
  ['no nodeName', { nodeName: undefined }, /spec\.nodeName: Required value/],
  [
    'an empty nodeName',
    { nodeName: '' },
    /spec\.nodeName: Invalid value: "": spec\.nodeName in body should be at least 1 chars long/,
  ],
  [
    'a nodeName of the wrong type',
    { nodeName: 7 },
    /spec\.nodeName: Invalid value: "integer": spec\.nodeName in body must be of type string/,
  ],
  [
    'an oversized nodeName',
    { nodeName: 'n'.repeat(254) },
    /spec\.nodeName: Too long: may not be (more than|longer than) 253/,
  ],
  [
    'an oversized reason',
    { reason: 'r'.repeat(1025) },
    /spec\.reason: Too long: may not be (more than|longer than) 1024/,
  ],
  [
    'a timeout that is no duration',
    { timeout: '10 minutes' },
    /spec\.timeout: Invalid value: "10 minutes": spec\.timeout in body should match/,
  ],
  [
    'a timeout of the wrong type',
    { timeout: 600 },
    /spec\.timeout: Invalid value: "integer": spec\.timeout in body must be of type string/,
  ],
  [
    'a grace period below -1',
    { gracePeriodSeconds: -2 },
    /spec\.gracePeriodSeconds: Invalid value: -2: spec\.gracePeriodSeconds in body should be greater than or equal to -1/,
  ],
  [
    'a grace period above a day',
    { gracePeriodSeconds: 86401 },
    /spec\.gracePeriodSeconds: Invalid value: 86401: spec\.gracePeriodSeconds in body should be less than or equal to 86400/,
  ],
  [
    'a grace period given as a string',
    { gracePeriodSeconds: '30' },
    /spec\.gracePeriodSeconds: Invalid value: "string": spec\.gracePeriodSeconds in body must be of type integer/,
  ],
  [
    'an oversized podSelector',
    { podSelector: `app=${'x'.repeat(1021)}` },
    /spec\.podSelector: Too long: may not be (more than|longer than) 1024/,
  ],
  [
    'a podSelector of the wrong type',
    { podSelector: ['app=web'] },
    /spec\.podSelector: Invalid value: "array": spec\.podSelector in body must be of type string/,
  ],
  [
    'a flag given as a string',
    { deleteEmptyDirData: 'yes' },
    /spec\.deleteEmptyDirData: Invalid value: "string": spec\.deleteEmptyDirData in body must be of type boolean/,
  ],
  [
    'a flag given as a number',
    { ignoreDaemonSets: 1 },
    /spec\.ignoreDaemonSets: Invalid value: "integer": spec\.ignoreDaemonSets in body must be of type boolean/,
  ],
  [
    'taints that are no list',
    { taints: taint() },
    /spec\.taints: Invalid value: "object": spec\.taints in body must be of type array/,
  ],
  [
    'more than 16 taints',
    { taints: Array.from({ length: 17 }, (_, i) => taint({ key: `k${i}` })) },
    /spec\.taints: Too many: 17: must have at most 16 items/,
  ],
  [
    'an unknown taint effect',
    { taints: [taint({ effect: 'NoWay' })] },
    /spec\.taints\[0\]\.effect: Unsupported value: "NoWay": supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"/,
  ],
  [
    'a taint without effect',
    { taints: [taint({ effect: undefined })] },
    /spec\.taints\[0\]\.effect: Required value/,
  ],
  [
    'an empty taint key',
    { taints: [taint({ key: '' })] },
    /spec\.taints\[0\]\.key: Invalid value: "": spec\.taints\[0\]\.key in body should be at least 1 chars long/,
  ],
  [
    'an oversized taint key',
    { taints: [taint({ key: 'k'.repeat(317) })] },
    /spec\.taints\[0\]\.key: Too long: may not be (more than|longer than) 316/,
  ],
  [
    'an oversized taint value',
    { taints: [taint({ value: 'v'.repeat(64) })] },
    /spec\.taints\[0\]\.value: Too long: may not be (more than|longer than) 63/,
  ],
];

describe('NodeMaintenance bad input, refused by the API server', () => {
  after(() => client.close());
  let seq = 0;

  for (const [what, fields, message] of cases) {
    it(`refuses ${what}, naming the field, and creates nothing`, async () => {
      const name = `nwtest-bad-${RUN}-${++seq}`;
      const spec = fields === undefined ? undefined : { nodeName: 'worker-000', ...fields };
      const body = {
        apiVersion: NodeMaintenances.apiVersion,
        kind: 'NodeMaintenance',
        metadata: { name, labels: { [LABEL]: RUN } },
        ...(spec ? { spec: JSON.parse(JSON.stringify(spec)) } : {}),
      };
      const err = await client.create(NM, body).then(
        () => undefined,
        (e: unknown) => e,
      );
      assert.ok(err instanceof ApiError, `refused (got ${String(err)})`);
      assert.equal(err.statusCode, 422, err.message);
      assert.match(err.message, message);
      const stored = await client.get(NM, name).then(
        () => 'stored',
        (e: ApiError) => e.statusCode,
      );
      assert.equal(stored, 404, 'nothing was created');
    });
  }

  it('has created no NodeMaintenance at all', async () => {
    const left = await client.list(NM, { labelSelector: `${LABEL}=${RUN}` });
    assert.deepEqual(
      left.items.map((o) => o.metadata?.name),
      [],
    );
  });

  it('accepts the good spec the cases start from (dry run), so each refusal is its field alone', async () => {
    const made = await client.create(
      NM,
      {
        apiVersion: NodeMaintenances.apiVersion,
        kind: 'NodeMaintenance',
        metadata: { name: `nwtest-good-${RUN}`, labels: { [LABEL]: RUN } },
        spec: { nodeName: 'worker-000', taints: [taint()] },
      },
      { dryRun: true },
    );
    assert.equal((made as { spec?: { nodeName?: string } }).spec?.nodeName, 'worker-000');
  });
});
