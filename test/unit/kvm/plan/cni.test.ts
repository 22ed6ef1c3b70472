// A node's pod range: the /25 its index numbers in the cluster's pod range.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { POD_CIDR } from '../../../../src/cluster/real-nodes/layout.ts';
import { DEFAULT_POD_CIDR, nodePodRange, podRangeProblem } from '../../../../src/kvm/plan/cni.ts';
import { DEFAULT_SERVICE_CIDR } from '../../../../src/kvm/plan/pki.ts';
import { firstIndexes, kvmCluster } from '../fixtures.ts';

/** [first, last + 1] of a range, as numbers. */
function span(cidr: string): [number, number] {
  const [ip = '', bits = '32'] = cidr.split('/');
  const base = ip.split('.').reduce((acc, o) => acc * 256 + Number(o), 0);
  const size = 2 ** (32 - Number(bits));
  const start = base - (base % size);
  return [start, start + size];
}
const overlap = (a: string, b: string) => {
  const [a0, a1] = span(a);
  const [b0, b1] = span(b);
  return a0 < b1 && b0 < a1;
};

describe('nodePodRange: the node index-th /25 of the pod range', () => {
  const table: Array<[string, number, string]> = [
    ['10.200.0.0/16', 1, '10.200.0.128/25'],
    ['10.200.0.0/16', 2, '10.200.1.0/25'],
    ['10.200.0.0/16', 511, '10.200.255.128/25'],
    ['10.200.7.9/16', 3, '10.200.1.128/25'],
    ['10.0.0.0/8', 300, '10.0.150.0/25'],
    ['10.2.3.0/25', 0, '10.2.3.0/25'],
  ];
  for (const [cidr, index, want] of table) {
    it(`${cidr} #${index} → ${want}`, () => assert.equal(nodePodRange(cidr, index), want));
  }

  const tooFew: Array<[string, number]> = [
    ['10.200.0.0/16', 512],
    ['10.2.3.0/24', 2],
    ['10.2.3.0/26', 0],
    ['10.200.0.0/16', -1],
    ['10.200.0.0/16', 1.5],
  ];
  for (const [cidr, index] of tooFew) {
    it(`${cidr} #${index}: RangeError`, () => assert.throws(() => nodePodRange(cidr, index), RangeError));
  }

  it("the default overlaps neither the management cluster's pod range nor the default service range", () => {
    for (const taken of [POD_CIDR, DEFAULT_SERVICE_CIDR])
      assert.equal(overlap(DEFAULT_POD_CIDR, taken), false, taken);
    assert.equal(overlap('10.244.3.0/24', POD_CIDR), true, 'the check sees an overlap');
  });

  it('a /16 has a range for every index a valid spec reaches: 7 masters and 200 workers, all replaced in one pass', () => {
    const highest = 2 * (7 + 200);
    assert.equal(nodePodRange('10.200.0.0/16', highest), '10.200.207.0/25');
  });
});

// A KVMCluster stored before the API refused ranges under /16 can hold one too small for its nodes.
describe('podRangeProblem: a stored pod range with no /25 for some node', () => {
  const table: Array<[string, string | undefined, number, RegExp | undefined]> = [
    ['the default, 1 master and 1 worker', undefined, 1, undefined],
    ['a /16, 1 master and 3 workers', '10.200.0.0/16', 3, undefined],
    // A /24 holds /25s #0 and #1: the master (#1) fits, the workers (#2, #3) do not.
    [
      'a /24, 1 master and 2 workers',
      '10.2.3.0/24',
      2,
      /10\.2\.3\.0\/24 has no \/25 for node w1, w2: .*\/16 or larger/,
    ],
    ['a /26, even the master', '10.2.3.0/26', 0, /for node m1:/],
  ];
  for (const [what, podCIDR, workers, want] of table)
    it(what, () => {
      const kc = kvmCluster({ workers, spec: { network: { vni: 7, ...(podCIDR ? { podCIDR } : {}) } } });
      const problem = podRangeProblem(kc.spec, firstIndexes(kc));
      if (want) assert.match(problem ?? '', want);
      else assert.equal(problem, undefined);
    });
});
