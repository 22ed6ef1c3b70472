// Bad input at a CRD's door, as a table: each case changes one thing in a
// spec the API server accepts, and must be refused (422) with a message naming
// the field, leaving nothing stored. Shared by the test/integration/*-crd suites.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, describe, it } from 'node:test';
import { KubeClient } from '../../src/runtime/client.ts';
import { ApiError } from '../../src/runtime/errors.ts';
import type { ResourceType } from '../../src/runtime/resources.ts';
import { testKubeConfig } from './cluster.ts';

type Spec = Record<string, unknown>;
/** [what, the good spec changed (a function of a fresh copy, or fields to replace; undefined: no spec), the message]. */
export type BadInput = [string, ((good: Spec) => unknown) | Spec | undefined, RegExp];

const LABEL = 'nodewarden.dev/test-crd-input';

export function refusesBadInput(
  cr: { type: ResourceType; apiVersion: string },
  good: Spec,
  cases: readonly BadInput[],
): void {
  const run = randomBytes(4).toString('hex');
  const client = KubeClient.fromKubeConfig(testKubeConfig());
  const namespace = cr.type.namespaced ? 'default' : undefined;
  const object = (name: string, spec: unknown) => ({
    apiVersion: cr.apiVersion,
    kind: cr.type.kind,
    metadata: { name, ...(namespace ? { namespace } : {}), labels: { [LABEL]: run } },
    ...(spec === undefined ? {} : { spec: JSON.parse(JSON.stringify(spec)) }),
  });

  describe(`${cr.type.kind} bad input, refused by the API server`, () => {
    after(() => client.close());
    let seq = 0;

    it('accepts the good spec the cases start from (dry run), so each refusal is its change alone', async () => {
      const made = await client.create(cr.type, object(`nwtest-good-${run}`, good), { dryRun: true });
      assert.ok((made as { spec?: unknown }).spec);
    });

    for (const [what, change, message] of cases) {
      it(`refuses ${what}, naming the field, and creates nothing`, async () => {
        const name = `nwtest-bad-${run}-${++seq}`;
        const copy = structuredClone(good);
        const spec =
          change === undefined
            ? undefined
            : typeof change === 'function'
              ? change(copy)
              : { ...copy, ...change };
        const err = await client.create(cr.type, object(name, spec)).then(
          () => undefined,
          (e: unknown) => e,
        );
        assert.ok(err instanceof ApiError, `refused (got ${String(err)})`);
        assert.equal(err.statusCode, 422, err.message);
        assert.match(err.message, message);
        const stored = await client.get(cr.type, name, namespace).then(
          () => 'stored',
          (e: ApiError) => e.statusCode,
        );
        assert.equal(stored, 404, 'nothing was created');
      });
    }

    it(`has created no ${cr.type.kind} at all`, async () => {
      const left = await client.list(cr.type, { namespace, labelSelector: `${LABEL}=${run}` });
      assert.deepEqual(
        left.items.map((o) => o.metadata?.name),
        [],
      );
    });
  });
}
