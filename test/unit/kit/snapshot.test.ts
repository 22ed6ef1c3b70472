import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import {
  readSnapshot,
  type Snapshottable,
  SnapshotWriter,
  writeSnapshot,
} from '../../../src/cluster/infra/kit/snapshot.ts';

const tmp = mkdtempSync(join(tmpdir(), 'nw-kit-snapshot-'));
after(() => rmSync(tmp, { recursive: true, force: true }));

/** Any simulator's state: a counter that tells its listeners when it moves. */
class Counter implements Snapshottable<{ n: number }> {
  n = 0;
  private readonly listeners = new Set<() => void>();
  onChange(l: () => void): () => void {
    this.listeners.add(l);
    return () => this.listeners.delete(l);
  }
  bump(): void {
    this.n++;
    for (const l of this.listeners) l();
  }
  snapshot() {
    return { n: this.n };
  }
}

const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('snapshot files', () => {
  it('round-trip through JSON, and read as undefined when absent', () => {
    const path = join(tmp, 'round.json');
    assert.equal(readSnapshot(path), undefined);
    writeSnapshot(path, { n: 3, names: ['a'] });
    assert.deepEqual(readSnapshot(path), { n: 3, names: ['a'] });
    assert.equal(existsSync(`${path}.tmp`), false, 'the temporary file is renamed into place');
  });

  it('replace the previous snapshot whole', () => {
    const path = join(tmp, 'replace.json');
    writeFileSync(path, '{"n": 1}\n');
    writeSnapshot(path, { n: 2 });
    assert.deepEqual(readSnapshot(path), { n: 2 });
  });
});

describe('the snapshot writer', () => {
  it('writes once per burst of changes, after the debounce', async () => {
    const path = join(tmp, 'burst.json');
    const state = new Counter();
    const writer = new SnapshotWriter(state, path, { debounceMs: 30 });
    writer.start();
    state.bump();
    state.bump();
    state.bump();
    assert.equal(readSnapshot(path), undefined, 'not before the debounce');
    await wait(80);
    assert.deepEqual(readSnapshot(path), { n: 3 });
    writer.stop();
  });

  it('writes what is pending on flush and stop, and nothing after stop', async () => {
    const path = join(tmp, 'stop.json');
    const state = new Counter();
    const writer = new SnapshotWriter(state, path, { debounceMs: 10_000 });
    writer.start();
    writer.flush();
    assert.equal(readSnapshot(path), undefined, 'nothing pending, nothing written');
    state.bump();
    writer.flush();
    assert.deepEqual(readSnapshot(path), { n: 1 });
    state.bump();
    writer.stop();
    assert.deepEqual(readSnapshot(path), { n: 2 });
    state.bump();
    await wait(20);
    assert.deepEqual(readSnapshot(path), { n: 2 });
  });

  it('reports a failed write instead of throwing into the simulator', () => {
    const errors: unknown[] = [];
    const state = new Counter();
    const writer = new SnapshotWriter(state, join(tmp, 'no', 'such', 'dir.json'), {
      onError: (err) => errors.push(err),
    });
    writer.start();
    state.bump();
    writer.stop();
    assert.equal(errors.length, 1);
  });
});
