import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import {
  hierarchies,
  makeCgroup,
  pidsIn,
  removeCgroup,
  removeEmptyParents,
} from '../../../src/cluster/real-nodes/cgroups.ts';

// A stand-in cgroup root: plain folders and files, as the kernel's v1 hierarchies look to a reader.
const root = mkdtempSync(join(tmpdir(), 'nw-cgroup-'));
after(() => rmSync(root, { recursive: true, force: true }));
for (const h of ['cpu', 'cpuset', 'memory', 'unified']) mkdirSync(join(root, h));
writeFileSync(join(root, 'cpuset', 'cpuset.cpus'), '0-1\n');
writeFileSync(join(root, 'cpuset', 'cpuset.mems'), '0\n');

// mkdir in a real cgroupfs makes the control files; here the test does, empty as the kernel's are.
function mkdirLikeKernel(path: string): void {
  for (const h of hierarchies(root)) {
    let dir = h;
    for (const part of path.split('/')) {
      dir = join(dir, part);
      mkdirSync(dir, { recursive: true });
      if (!existsSync(join(dir, 'cgroup.procs'))) writeFileSync(join(dir, 'cgroup.procs'), '');
      if (h.endsWith('cpuset'))
        for (const f of ['cpuset.cpus', 'cpuset.mems'])
          if (!existsSync(join(dir, f))) writeFileSync(join(dir, f), '');
    }
  }
}

describe('cgroups of real nodes', () => {
  it('lists the v1 hierarchies present, v2 included', () => {
    assert.deepEqual(
      hierarchies(root).map((h) => h.slice(root.length + 1)),
      ['cpu', 'cpuset', 'memory', 'unified'],
    );
  });

  it('fills a new cpuset from its parent at every level, so it can take tasks', () => {
    mkdirLikeKernel('nodewarden/c/n/node');
    makeCgroup('nodewarden/c/n/node', root);
    assert.equal(readFileSync(join(root, 'cpuset', 'nodewarden/c/n/node', 'cpuset.cpus'), 'utf8'), '0-1\n');
    assert.equal(readFileSync(join(root, 'cpuset', 'nodewarden/c', 'cpuset.mems'), 'utf8'), '0\n');
  });

  it('finds pids anywhere below a path, in any hierarchy', () => {
    mkdirLikeKernel('nodewarden/c/n/kubepods/pod1');
    writeFileSync(join(root, 'cpu', 'nodewarden/c/n/node', 'cgroup.procs'), '11\n12\n');
    writeFileSync(join(root, 'memory', 'nodewarden/c/n/kubepods/pod1', 'cgroup.procs'), '13\n');
    assert.deepEqual(pidsIn('nodewarden/c', root).sort(), [11, 12, 13]);
    assert.deepEqual(pidsIn('nodewarden/other', root), []);
  });

  it('removes a subtree deepest first, then parents that became empty, and no other', () => {
    // rmdir on cgroupfs ignores the control files; a plain folder tree stands in without them.
    const plain = mkdtempSync(join(tmpdir(), 'nw-cgroup-rm-'));
    try {
      for (const h of ['cpu', 'memory']) {
        mkdirSync(join(plain, h, 'nodewarden', 'c', 'n', 'kubepods'), { recursive: true });
        mkdirSync(join(plain, h, 'nodewarden', 'other'), { recursive: true });
      }
      removeCgroup('nodewarden/c', plain);
      assert.equal(existsSync(join(plain, 'cpu', 'nodewarden', 'c')), false);
      removeEmptyParents('nodewarden/c', plain);
      assert.equal(existsSync(join(plain, 'memory', 'nodewarden', 'other')), true, "another cluster's stays");
      rmSync(join(plain, 'memory', 'nodewarden', 'other'), { recursive: true });
      removeEmptyParents('nodewarden/c', plain);
      assert.equal(existsSync(join(plain, 'memory', 'nodewarden')), false);
    } finally {
      rmSync(plain, { recursive: true, force: true });
    }
  });
});
