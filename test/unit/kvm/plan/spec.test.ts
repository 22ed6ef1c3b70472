import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { nodeObjectName } from '../../../../src/kvm/plan/names.ts';
import {
  clusterNodes,
  DEFAULT_PORT_MAPPINGS,
  drainTimeoutMs,
  masterPodMemoryM,
  memoryQuantity,
  parseMemory,
  podMemoryM,
  portMappings,
  securePort,
  unhealthyPolicy,
  workerPodMemoryM,
} from '../../../../src/kvm/plan/spec.ts';
import { kvmCluster, masterSpec, workerSpec } from '../fixtures.ts';

describe('pod memory (anchor key.MemoryQuantityMaster / MemoryQuantityWorker)', () => {
  // master: VM memory in M + 1024M (QEMU) + 512M (other containers)
  const masters: Array<[string, number]> = [
    ['1G', 2536],
    ['2G', 3536],
    ['1536M', 3072],
    ['4Gi', 4295 + 1536], // 4·2^30 bytes = 4294.97M, rounded up
    ['512Mi', 537 + 1536],
    ['1.5G', 3036],
  ];
  for (const [memory, want] of masters) {
    it(`master of ${memory} asks for ${want}M`, () => {
      assert.equal(masterPodMemoryM(memory), want);
      assert.equal(podMemoryM('master', memory), want);
    });
  }
  // worker: GB·1024M + 512M + 768M·(2 + GB/12), GB whole gigabytes, GB/12 an integer division
  const workers: Array<[string, number]> = [
    ['8G', 10240],
    ['1G', 1024 + 512 + 1536],
    ['11G', 11 * 1024 + 512 + 1536],
    ['11.9G', 11 * 1024 + 512 + 1536], // whole gigabytes only
    ['12G', 12 * 1024 + 512 + 768 * 3], // GB/12 kicks in
    ['23G', 23 * 1024 + 512 + 768 * 3],
    ['24G', 24 * 1024 + 512 + 768 * 4],
    ['4Gi', 4 * 1024 + 512 + 1536], // 4.29 GB → 4
    ['16Gi', 17 * 1024 + 512 + 768 * 3], // 17.18 GB → 17
    ['2048M', 2 * 1024 + 512 + 1536],
  ];
  for (const [memory, want] of workers) {
    it(`worker of ${memory} asks for ${want}M`, () => {
      assert.equal(workerPodMemoryM(memory), want);
      assert.equal(podMemoryM('worker', memory), want);
    });
  }

  it('the VM memory as a Node capacity quantity is in Mi, as QEMU reads the string (G = GiB)', () => {
    assert.equal(memoryQuantity('8G'), '8192Mi');
    assert.equal(memoryQuantity('4Gi'), '4096Mi');
    assert.equal(memoryQuantity('1536M'), '1536Mi');
    assert.equal(memoryQuantity('1.5G'), '1536Mi');
  });
});

describe('parseMemory', () => {
  const good: Array<[string, number]> = [
    ['8G', 8e9],
    ['1536M', 1536e6],
    ['4Gi', 4 * 2 ** 30],
    ['512Mi', 512 * 2 ** 20],
    ['1.5G', 1.5e9],
  ];
  for (const [text, bytes] of good) {
    it(`reads ${text} as ${bytes} bytes`, () => assert.equal(parseMemory(text), bytes));
  }
  for (const bad of [
    '',
    '8',
    'G',
    '8GB',
    '8g',
    '8 G',
    '-1G',
    '8K',
    '8Ti',
    '1.5.2G',
    '.5G',
    'eightG',
    ' 8G',
    '8G\n',
  ]) {
    it(`refuses ${JSON.stringify(bad)}`, () => {
      assert.throws(() => parseMemory(bad), RangeError);
    });
  }
  it('says what a good size looks like', () => {
    assert.throws(() => parseMemory('8GB'), /8GB.*such as 8G/);
  });
});

describe('portMappings', () => {
  it('keeps the given mappings, with and without a nodePort', () => {
    const kc = kvmCluster({
      spec: {
        portMappings: [
          { name: 'http', nodePort: 31010, targetPort: 30010 },
          { name: 'https', targetPort: 30011 },
          { name: 'metrics', nodePort: 31999, targetPort: 9100 },
        ],
      },
    });
    const got = portMappings(kc.spec);
    assert.deepEqual(got, [
      { name: 'http', nodePort: 31010, targetPort: 30010 },
      { name: 'https', targetPort: 30011 },
      { name: 'metrics', nodePort: 31999, targetPort: 9100 },
    ]);
    assert.equal('nodePort' in (got[1] ?? {}), false, 'no nodePort key when none was given');
  });

  for (const [name, given] of [
    ['none', undefined],
    ['an empty list', []],
  ] as const) {
    it(`${name} → http 30010 and https 30011 on the workers, the nodePorts left to the API server`, () => {
      const kc = kvmCluster({ spec: given === undefined ? {} : { portMappings: [...given] } });
      const got = portMappings(kc.spec);
      assert.deepEqual(got, [
        { name: 'http', targetPort: 30010 },
        { name: 'https', targetPort: 30011 },
      ]);
      // Improvement over the anchor's fixed nodePorts 30010/30011, which two clusters could not both have.
      assert.ok(got.every((p) => p.nodePort === undefined));
    });
  }

  it('hands out copies: changing one does not change the defaults', () => {
    const got = portMappings(kvmCluster().spec);
    (got[0] as { targetPort: number }).targetPort = 1;
    assert.equal(DEFAULT_PORT_MAPPINGS[0]?.targetPort, 30010);
    assert.equal(portMappings(kvmCluster().spec)[0]?.targetPort, 30010);
  });
});

describe('clusterNodes', () => {
  it('lists the masters, then the workers, each in spec order', () => {
    const kc = kvmCluster({
      spec: {
        masters: [masterSpec('m2'), masterSpec('m1')],
        workers: [workerSpec('w9'), workerSpec('w1'), workerSpec('w5')],
      },
    });
    assert.deepEqual(
      clusterNodes(kc.spec).map((n) => `${n.role}:${n.id}`),
      ['master:m2', 'master:m1', 'worker:w9', 'worker:w1', 'worker:w5'],
    );
  });

  it('a cluster without workers has its masters only', () => {
    const kc = kvmCluster({ masters: 3 });
    const { workers: _, ...spec } = kc.spec;
    assert.deepEqual(
      clusterNodes(spec).map((n) => n.id),
      ['m1', 'm2', 'm3'],
    );
  });

  it('keeps each node its own spec', () => {
    const kc = kvmCluster({ spec: { workers: [workerSpec('w1', { cpus: 7 })] } });
    assert.equal(clusterNodes(kc.spec).find((n) => n.id === 'w1')?.spec.cpus, 7);
  });

  it('names a node master-<id> or worker-<id>', () => {
    assert.equal(nodeObjectName('master', 'm1'), 'master-m1');
    assert.equal(nodeObjectName('worker', 'a7'), 'worker-a7');
  });
});

describe('unhealthyPolicy', () => {
  it('defaults: off, 30m NotReady, 10% at once, 10m between', () => {
    assert.deepEqual(unhealthyPolicy(kvmCluster().spec), {
      terminate: false,
      notReadyForMs: 30 * 60_000,
      maxFraction: 0.1,
      pauseBetweenMs: 10 * 60_000,
    });
  });

  it('turned on with only terminate keeps the other defaults', () => {
    assert.deepEqual(unhealthyPolicy(kvmCluster({ spec: { unhealthyNodes: { terminate: true } } }).spec), {
      terminate: true,
      notReadyForMs: 30 * 60_000,
      maxFraction: 0.1,
      pauseBetweenMs: 10 * 60_000,
    });
  });

  it('reads the given durations and share', () => {
    const spec = kvmCluster({
      spec: {
        unhealthyNodes: { terminate: true, notReadyFor: '1h30m', maxFraction: '25%', pauseBetween: '90s' },
      },
    }).spec;
    assert.deepEqual(unhealthyPolicy(spec), {
      terminate: true,
      notReadyForMs: 90 * 60_000,
      maxFraction: 0.25,
      pauseBetweenMs: 90_000,
    });
  });

  it('0% and 100% are fractions 0 and 1', () => {
    const at = (maxFraction: string) =>
      unhealthyPolicy(kvmCluster({ spec: { unhealthyNodes: { terminate: true, maxFraction } } }).spec)
        .maxFraction;
    assert.equal(at('0%'), 0);
    assert.equal(at('100%'), 1);
  });
});

describe('drain timeout and API port', () => {
  it('defaults to 10m and 443', () => {
    const spec = kvmCluster().spec;
    assert.equal(drainTimeoutMs(spec), 600_000);
    assert.equal(securePort(spec), 443);
  });
  it('takes the given ones', () => {
    const spec = kvmCluster({
      spec: { drain: { timeout: '2m' }, api: { domain: 'api.x', securePort: 6443 } },
    }).spec;
    assert.equal(drainTimeoutMs(spec), 120_000);
    assert.equal(securePort(spec), 6443);
  });
});
