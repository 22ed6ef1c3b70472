import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import {
  type AddonProcess,
  builtTwin,
  nodeScript,
  runningPid,
  startDetached,
  stopProcess,
} from '../../../src/cluster/infra/kit/process.ts';

const dir = mkdtempSync(join(tmpdir(), 'nw-addon-'));
after(() => rmSync(dir, { recursive: true, force: true }));

// A stand-in server: says it started, then lives until SIGTERM (or ignores it).
const script = join(dir, 'server.mjs');
writeFileSync(
  script,
  `process.on('SIGTERM', () => { if (process.argv[3] !== 'stubborn') { console.log('bye'); process.exit(0); } });
console.log('up'); setInterval(() => {}, 1000);`,
);

function addon(name: string): AddonProcess {
  return { pidFile: join(dir, `${name}.pid`), logFile: join(dir, `${name}.log`), marker: `${dir}/${name}` };
}

async function waitForLog(p: AddonProcess, text: string): Promise<void> {
  for (
    let i = 0;
    i < 100 && !(existsSync(p.logFile) && readFileSync(p.logFile, 'utf8').includes(text));
    i++
  ) {
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('add-on processes', () => {
  it('start detached with a pid file and a log, and stop on SIGTERM', async () => {
    const p = addon('polite');
    const pid = startDetached(p, process.execPath, [script, p.marker]);
    assert.equal(runningPid(p), pid);
    await waitForLog(p, 'up');
    assert.equal(await stopProcess(p), true);
    assert.equal(runningPid(p), undefined);
    assert.equal(existsSync(p.pidFile), false);
    assert.match(readFileSync(p.logFile, 'utf8'), /up\nbye\n/);
    assert.equal(await stopProcess(p), false, 'stopping again is a no-op');
  });

  it('are killed when they ignore SIGTERM past the grace period', async () => {
    const p = addon('stubborn');
    startDetached(p, process.execPath, [script, 'stubborn', p.marker]);
    await waitForLog(p, 'up');
    assert.equal(await stopProcess(p, 200), true);
    assert.equal(runningPid(p), undefined);
  });

  it('never take an unrelated process that reused the pid for theirs', { skip: !existsSync('/proc') }, () => {
    const p = addon('reused');
    writeFileSync(p.pidFile, `${process.pid}\n`); // alive, but its command line lacks the marker
    assert.equal(runningPid(p), undefined);
  });

  it('run our own scripts the way this process runs: from source here', () => {
    const { command, args } = nodeScript(import.meta.url, './x');
    assert.equal(command, process.execPath);
    assert.ok(args.at(-1)?.endsWith('/x.ts'));
    assert.ok(args.includes('--disable-warning=ExperimentalWarning'));
    assert.ok(!args.some((a) => a.startsWith('--test')), 'never the test runner flags');
    assert.ok(nodeScript('file:///app/dist/a/b.js', './c').args.includes('/app/dist/a/c.js'));
  });

  it('run a daemon from its dist/ twin only while no file under src/ is newer', () => {
    const root = join(dir, 'repo');
    mkdirSync(join(root, 'src', 'a'), { recursive: true });
    mkdirSync(join(root, 'dist', 'a'), { recursive: true });
    const source = join(root, 'src', 'a', 'entry.ts');
    const other = join(root, 'src', 'a', 'other.ts');
    writeFileSync(source, '');
    writeFileSync(other, '');
    assert.equal(builtTwin(source, root), undefined, 'not built');
    const built = join(root, 'dist', 'a', 'entry.js');
    writeFileSync(built, '');
    const past = new Date(Date.now() - 60_000);
    utimesSync(source, past, past);
    utimesSync(other, past, past);
    assert.equal(builtTwin(source, root), built);
    assert.equal(builtTwin(join(dir, 'elsewhere.ts'), root), undefined, 'not under src/');
    utimesSync(other, new Date(), new Date(Date.now() + 60_000));
    assert.equal(builtTwin(source, root), undefined, 'stale: a source changed after the build');
    utimesSync(other, past, past);
    process.env.NODEWARDEN_FROM_SOURCE = '1';
    try {
      assert.equal(builtTwin(source, root), undefined, 'NODEWARDEN_FROM_SOURCE wins');
    } finally {
      delete process.env.NODEWARDEN_FROM_SOURCE;
    }
  });
});
