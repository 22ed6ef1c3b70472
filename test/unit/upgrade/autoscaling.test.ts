import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ScalingGroupSpecType } from '../../../src/api/upgrade.ts';
import {
  applyAutoscaler,
  autoscalerCommand,
  type DeploymentObject,
  desiredAutoscaler,
  nodeGroupArg,
} from '../../../src/upgrade/controllers/autoscaling.ts';

const group = (spec: Partial<ScalingGroupSpecType> & { groupId: string }, deleting = false) => ({
  metadata: { name: spec.groupId, ...(deleting ? { deletionTimestamp: '2026-01-01T00:00:00Z' } : {}) },
  spec: { role: 'Worker' as const, autoscaling: true, min: 1, max: 10, ...spec },
});

describe('the autoscaler node-group argument', () => {
  it('is min:max:name for a worker group that allows autoscaling', () => {
    assert.equal(
      nodeGroupArg(group({ groupId: 'worker-group', min: 2, max: 7 })),
      '--nodes=2:7:worker-group',
    );
  });

  it('names the group as the autoscaler knows it when that differs', () => {
    assert.equal(
      nodeGroupArg(group({ groupId: 'projects/p/zones/z/igm/w', autoscalerGroupName: 'w' })),
      '--nodes=1:10:w',
    );
  });

  it('takes the discovery defaults for missing bounds', () => {
    assert.equal(
      nodeGroupArg({ spec: { groupId: 'g', autoscaling: true, role: 'Worker' } }),
      '--nodes=1:10:g',
    );
  });

  it('is absent for a control-plane group, even one that asks for autoscaling', () => {
    assert.equal(nodeGroupArg(group({ groupId: 'cp', role: 'ControlPlane' })), undefined);
  });

  it('is absent for a group without autoscaling, or being deleted', () => {
    assert.equal(nodeGroupArg(group({ groupId: 'w', autoscaling: false })), undefined);
    assert.equal(nodeGroupArg({ spec: { groupId: 'w' } }), undefined);
    assert.equal(nodeGroupArg(group({ groupId: 'w' }, true)), undefined);
  });
});

describe('the autoscaler command', () => {
  it('is the binary, the sorted extra flags, then the sorted node groups', () => {
    const cmd = autoscalerCommand({ 'scale-down-enabled': 'false', 'cloud-provider': 'aws' }, [
      group({ groupId: 'zeta' }),
      group({ groupId: 'alpha', min: 0, max: 3 }),
      group({ groupId: 'cp', role: 'ControlPlane' }),
      group({ groupId: 'off', autoscaling: false }),
    ]);
    assert.deepEqual(cmd, [
      './cluster-autoscaler',
      '--cloud-provider=aws',
      '--scale-down-enabled=false',
      '--nodes=0:3:alpha',
      '--nodes=1:10:zeta',
    ]);
  });

  it('does not depend on the order the cache lists groups in', () => {
    const a = group({ groupId: 'a' });
    const b = group({ groupId: 'b' });
    assert.deepEqual(autoscalerCommand({}, [a, b]), autoscalerCommand({}, [b, a]));
  });

  it('is the bare binary without flags or groups', () => {
    assert.deepEqual(autoscalerCommand(undefined, []), ['./cluster-autoscaler']);
  });
});

describe('the desired autoscaler', () => {
  it('runs one replica when enabled and none when disabled', () => {
    assert.equal(desiredAutoscaler({ enabled: true }, []).replicas, 1);
    assert.equal(desiredAutoscaler({ enabled: false }, []).replicas, 0);
  });
});

describe('updating the autoscaler Deployment', () => {
  const deployment = (replicas: number | undefined, command?: string[]): DeploymentObject => ({
    metadata: { name: 'ca', namespace: 'kube-system', resourceVersion: '7' },
    spec: {
      ...(replicas === undefined ? {} : { replicas }),
      template: {
        spec: {
          containers: [
            { name: 'ca', image: 'ca:1', ...(command ? { command } : {}) },
            { name: 'sidecar', command: ['x'] },
          ],
        },
      },
    },
  });
  const want = { replicas: 1, command: ['./cluster-autoscaler', '--nodes=1:10:w'] };

  it('leaves a Deployment that already matches alone', () => {
    assert.equal(applyAutoscaler(deployment(1, [...want.command]), want), undefined);
  });

  it('counts absent replicas as the API default of 1', () => {
    assert.equal(applyAutoscaler(deployment(undefined, [...want.command]), want), undefined);
  });

  it('scales and rewrites the first container only, without touching its input', () => {
    const before = deployment(0, ['./cluster-autoscaler']);
    const next = applyAutoscaler(before, want);
    assert.ok(next);
    assert.equal(next.spec?.replicas, 1);
    assert.deepEqual(next.spec?.template?.spec?.containers?.[0]?.command, want.command);
    assert.equal(next.spec?.template?.spec?.containers?.[0]?.image, 'ca:1');
    assert.deepEqual(next.spec?.template?.spec?.containers?.[1]?.command, ['x']);
    assert.equal(next.metadata?.resourceVersion, '7', 'the update stays optimistic');
    assert.equal(before.spec?.replicas, 0);
    assert.deepEqual(before.spec?.template?.spec?.containers?.[0]?.command, ['./cluster-autoscaler']);
  });

  it('notices a changed command even with the right replicas', () => {
    assert.ok(applyAutoscaler(deployment(1, ['./cluster-autoscaler']), want));
  });

  it('cannot update a Deployment without containers', () => {
    assert.equal(applyAutoscaler({ metadata: { name: 'x' }, spec: { replicas: 0 } }, want), undefined);
  });
});
