import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import {
  type Daemon,
  daemonFiles,
  previousPort,
  publishEndpointFile,
  readDaemonConfig,
  runningEndpoint,
  startDaemon,
  stopDaemon,
} from '../../../src/cluster/infra/kit/daemon.ts';

const root = mkdtempSync(join(tmpdir(), 'nw-kit-daemon-'));
after(() => rmSync(root, { recursive: true, force: true }));

// A stand-in simulator: reads its config, publishes an endpoint (or dies, or
// never publishes), then lives until SIGTERM.
const script = join(root, 'sim.mjs');
writeFileSync(
  script,
  `import { readFileSync, writeFileSync, renameSync } from 'node:fs';
const dir = process.argv[process.argv.indexOf('--dir') + 1];
const config = JSON.parse(readFileSync(dir + '/config.json', 'utf8'));
if (config.mode === 'die') { console.error('cannot start: ' + config.mode); process.exit(3); }
if (config.mode === 'serve') { writeFileSync(dir + '/endpoint.tmp', 'http://127.0.0.1:' + config.port + '\\n'); renameSync(dir + '/endpoint.tmp', dir + '/endpoint'); }
process.on('SIGTERM', () => process.exit(0));
setInterval(() => {}, 1000);`,
);
const entry = { command: process.execPath, args: [script] };

function sim(name: string): Daemon {
  const dir = join(root, name);
  mkdirSync(dir, { recursive: true });
  return { dir, name: 'sim', title: `the ${name} simulator` };
}

describe("a simulator's process", () => {
  it('starts detached, is found again by its folder, and stops', async () => {
    const d = sim('serving');
    const endpoint = await startDaemon(d, { entry, config: { mode: 'serve', port: 4711 } });
    try {
      assert.equal(endpoint, 'http://127.0.0.1:4711');
      assert.equal(runningEndpoint(d), endpoint);
      assert.deepEqual(readDaemonConfig(d.dir), { mode: 'serve', port: 4711 });
      assert.ok(existsSync(daemonFiles(d.dir, 'sim').pid));
    } finally {
      await stopDaemon(d);
    }
    assert.equal(runningEndpoint(d), undefined, 'stopped: no endpoint, though the file stays');
    assert.equal(previousPort(d), 4711, 'the port is remembered for the next start');
  });

  it('reports a process that exits while starting, with the tail of its log', async () => {
    const d = sim('dying');
    await assert.rejects(
      startDaemon(d, { entry, config: { mode: 'die' } }),
      /the dying simulator exited while starting:\n.*cannot start: die/s,
    );
  });

  it('gives up on a process that never publishes its endpoint, and stops it', async () => {
    const d = sim('silent');
    await assert.rejects(
      startDaemon(d, { entry, config: { mode: 'silent' }, timeoutMs: 500 }),
      /the silent simulator did not start within 0.5s/,
    );
    assert.equal(existsSync(daemonFiles(d.dir, 'sim').pid), false, 'no process left behind');
  });

  it('drops a stale endpoint before starting, so it never answers for the old run', async () => {
    const d = sim('stale');
    publishEndpointFile(d.dir, 'http://127.0.0.1:1');
    assert.equal(readFileSync(join(d.dir, 'endpoint'), 'utf8'), 'http://127.0.0.1:1\n');
    await assert.rejects(
      startDaemon(d, { entry, config: { mode: 'silent' }, timeoutMs: 300 }),
      /did not start/,
    );
    assert.equal(existsSync(join(d.dir, 'endpoint')), false);
  });

  it('stopping one that does not run is a no-op', async () => {
    await stopDaemon(sim('never'));
  });
});
