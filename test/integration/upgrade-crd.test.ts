// Bad input at the upgrade CRDs' doors (NodeVersion, ScalingGroup,
// PendingNode, AutoscalingStrategy), against the real API server and the
// CRDs' own schemas: wrong types, out-of-range and unknown values, oversized
// strings and maps, cross-field conflicts (CEL). Each is refused with a
// message naming the field, and nothing is created.
import {
  AutoscalingStrategies,
  BOTH_ZERO_MESSAGE,
  NodeVersions,
  PendingNodes,
  ScalingGroups,
} from '../../src/api/upgrade.ts';
import { refusesBadInput } from '../harness/bad-input.ts';

const TOO_LONG = /Too long: may not be (more than|longer than)/;
const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

refusesBadInput(
  NodeVersions,
  { image: 'nwos-1.1.0', kubernetesVersion: 'v1.37.1', strategy: { maxSurge: 1, maxUnavailable: 1 } },
  [
    ['no spec at all', undefined, /spec: Required value/],
    ['no image', { image: undefined }, /spec\.image: Required value/],
    [
      'an empty image',
      { image: '' },
      /spec\.image: Invalid value: "": spec\.image in body should be at least 1 chars long/,
    ],
    [
      'an image of the wrong type',
      { image: 7 },
      /spec\.image: Invalid value: "integer": spec\.image in body must be of type string/,
    ],
    ['an oversized image', { image: 'i'.repeat(1025) }, new RegExp(`spec\\.image: ${TOO_LONG.source} 1024`)],
    [
      'an oversized imageVersion',
      { imageVersion: 'v'.repeat(129) },
      new RegExp(`spec\\.imageVersion: ${TOO_LONG.source} 128`),
    ],
    [
      'a kubernetesVersion without its v',
      { kubernetesVersion: '1.37.1' },
      /spec\.kubernetesVersion: Invalid value: "1\.37\.1": spec\.kubernetesVersion in body should match/,
    ],
    [
      'a maxSurge of 0',
      (s) => ({ ...s, strategy: { maxSurge: 0 } }),
      /spec\.strategy\.maxSurge: Invalid value: 0: spec\.strategy\.maxSurge in body should be greater than or equal to 1/,
    ],
    [
      'a maxUnavailable below 0',
      (s) => ({ ...s, strategy: { maxUnavailable: -1 } }),
      /spec\.strategy\.maxUnavailable: Invalid value: -1: spec\.strategy\.maxUnavailable in body should be greater than or equal to 0/,
    ],
    [
      'a maxUnavailable above 100%',
      (s) => ({ ...s, strategy: { maxUnavailable: '101%' } }),
      /spec\.strategy\.maxUnavailable: Invalid value: "101%": spec\.strategy\.maxUnavailable in body should match/,
    ],
    [
      'a maxSurge that is no count or percentage',
      (s) => ({ ...s, strategy: { maxSurge: 'two' } }),
      /spec\.strategy\.maxSurge: Invalid value: "two": spec\.strategy\.maxSurge in body should match/,
    ],
    [
      'a maxSurge of the wrong type',
      (s) => ({ ...s, strategy: { maxSurge: true } }),
      /spec\.strategy\.maxSurge: Invalid value: "boolean": spec\.strategy\.maxSurge in body must be of type integer,string/,
    ],
    [
      'both budgets 0 (CEL)',
      (s) => ({ ...s, strategy: { maxSurge: '0%', maxUnavailable: 0 } }),
      new RegExp(
        `spec\\.strategy(\\.maxSurge)?: Invalid value: .*${escapeRegExp(BOTH_ZERO_MESSAGE.slice(0, 40))}`,
      ),
    ],
    [
      'a drainTimeout that is no duration',
      (s) => ({ ...s, strategy: { drainTimeout: '30 minutes' } }),
      /spec\.strategy\.drainTimeout: Invalid value: "30 minutes": spec\.strategy\.drainTimeout in body should match/,
    ],
    [
      'paused given as a string',
      (s) => ({ ...s, strategy: { paused: 'yes' } }),
      /spec\.strategy\.paused: Invalid value: "string": spec\.strategy\.paused in body must be of type boolean/,
    ],
    [
      'a strategy that is no object',
      { strategy: 'fast' },
      /spec\.strategy: Invalid value: "string": spec\.strategy in body must be of type object/,
    ],
  ],
);

refusesBadInput(
  ScalingGroups,
  { groupId: 'gpu-workers', role: 'Worker', autoscaling: true, min: 1, max: 8 },
  [
    ['no groupId', { groupId: undefined }, /spec\.groupId: Required value/],
    [
      'an empty groupId',
      { groupId: '' },
      /spec\.groupId: Invalid value: "": spec\.groupId in body should be at least 1 chars long/,
    ],
    [
      'an oversized groupId',
      { groupId: 'g'.repeat(1025) },
      new RegExp(`spec\\.groupId: ${TOO_LONG.source} 1024`),
    ],
    [
      'an unknown role',
      { role: 'Gpu' },
      /spec\.role: Unsupported value: "Gpu": supported values: "ControlPlane", "Worker"/,
    ],
    [
      'a negative min',
      { min: -1 },
      /spec\.min: Invalid value: -1: spec\.min in body should be greater than or equal to 0/,
    ],
    [
      'a max given as a string',
      { max: '8' },
      /spec\.max: Invalid value: "string": spec\.max in body must be of type integer/,
    ],
    ['min above max (CEL)', { min: 9, max: 8 }, /spec\.min must not exceed spec\.max/],
    [
      'autoscaling given as a string',
      { autoscaling: 'true' },
      /spec\.autoscaling: Invalid value: "string": spec\.autoscaling in body must be of type boolean/,
    ],
    [
      'an oversized nodeVersion',
      { nodeVersion: 'n'.repeat(254) },
      new RegExp(`spec\\.nodeVersion: ${TOO_LONG.source} 253`),
    ],
    [
      'a nodeVersion that is no object name',
      { nodeVersion: 'Not_A_Name' },
      /spec\.nodeVersion: Invalid value: "Not_A_Name": spec\.nodeVersion in body should match/,
    ],
    [
      'a rollout maxSurge of 0',
      { rollout: { maxSurge: 0 } },
      /spec\.rollout\.maxSurge: Invalid value: 0: spec\.rollout\.maxSurge in body should be greater than or equal to 1/,
    ],
    [
      'a rollout maxSize not above min (CEL)',
      { min: 3, rollout: { maxSize: 3 } },
      /spec: Invalid value: .*spec\.rollout\.maxSize must exceed spec\.min/,
    ],
  ],
);

refusesBadInput(
  PendingNodes,
  {
    providerID: 'nwsim://worker/worker-006',
    groupID: 'worker',
    nodeName: 'worker-006',
    goal: 'Join',
    deadline: '2030-01-01T00:15:00Z',
  },
  [
    ['no goal', { goal: undefined }, /spec\.goal: Required value/],
    [
      'an unknown goal',
      { goal: 'Stay' },
      /spec\.goal: Unsupported value: "Stay": supported values: "Join", "Leave"/,
    ],
    [
      'an empty providerID',
      { providerID: '' },
      /spec\.providerID: Invalid value: "": spec\.providerID in body should be at least 1 chars long/,
    ],
    [
      'an oversized groupID',
      { groupID: 'g'.repeat(1025) },
      new RegExp(`spec\\.groupID: ${TOO_LONG.source} 1024`),
    ],
    [
      'an oversized nodeName',
      { nodeName: 'n'.repeat(254) },
      new RegExp(`spec\\.nodeName: ${TOO_LONG.source} 253`),
    ],
    [
      'a nodeName that is no DNS name',
      { nodeName: 'Worker_6' },
      /spec\.nodeName: Invalid value: "Worker_6": spec\.nodeName in body should match/,
    ],
    [
      'a nodeName of the wrong type',
      { nodeName: ['a'] },
      /spec\.nodeName: Invalid value: "array": spec\.nodeName in body must be of type string/,
    ],
    [
      'a deadline that is no time',
      { deadline: 'tomorrow' },
      /spec\.deadline: Invalid value: "tomorrow": spec\.deadline in body must be of type date-time/,
    ],
  ],
);

refusesBadInput(
  AutoscalingStrategies,
  {
    enabled: true,
    deploymentName: 'cluster-autoscaler',
    deploymentNamespace: 'kube-system',
    autoscalerExtraArgs: { 'scale-down-delay-after-add': '10m' },
  },
  [
    ['no enabled', { enabled: undefined }, /spec\.enabled: Required value/],
    [
      'enabled given as a string',
      { enabled: 'true' },
      /spec\.enabled: Invalid value: "string": spec\.enabled in body must be of type boolean/,
    ],
    [
      'an empty deploymentName',
      { deploymentName: '' },
      /spec\.deploymentName: Invalid value: "": spec\.deploymentName in body should be at least 1 chars long/,
    ],
    [
      'a deploymentName that is no DNS name',
      { deploymentName: 'Cluster_Autoscaler' },
      /spec\.deploymentName: Invalid value: "Cluster_Autoscaler": spec\.deploymentName in body should match/,
    ],
    [
      'an oversized deploymentNamespace',
      { deploymentNamespace: 'n'.repeat(64) },
      new RegExp(`spec\\.deploymentNamespace: ${TOO_LONG.source} 63`),
    ],
    [
      'a deploymentNamespace that is no DNS label',
      { deploymentNamespace: 'kube.system' },
      /spec\.deploymentNamespace: Invalid value: "kube\.system": spec\.deploymentNamespace in body should match/,
    ],
    [
      'an extra arg whose value is no string',
      { autoscalerExtraArgs: { 'scale-down-enabled': true } },
      /spec\.autoscalerExtraArgs\.scale-down-enabled: Invalid value: "boolean": spec\.autoscalerExtraArgs\.scale-down-enabled in body must be of type string/,
    ],
    [
      'an oversized extra arg value',
      { autoscalerExtraArgs: { expander: 'x'.repeat(1025) } },
      new RegExp(`spec\\.autoscalerExtraArgs\\.expander: ${TOO_LONG.source} 1024`),
    ],
    [
      'more than 64 extra args',
      { autoscalerExtraArgs: Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`flag-${i}`, 'v'])) },
      /spec\.autoscalerExtraArgs: Too many: 65: must have at most 64 items/,
    ],
    [
      'an extra arg named with its dashes (CEL)',
      { autoscalerExtraArgs: { '--expander': 'random' } },
      /spec\.autoscalerExtraArgs: Invalid value: .*flag names are lower-case words/,
    ],
  ],
);
