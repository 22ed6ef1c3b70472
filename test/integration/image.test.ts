// The operator's image as `make image` builds it, judged by tools nobody here
// wrote: skopeo reads the archive, umoci unpacks it into a runtime bundle and
// runc runs it — as the user, from the folder and with the entrypoint the
// Dockerfile gives, with the same files.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { OPERATOR_RUN_CONFIG, operatorImageName } from '../../src/cluster/image/operator-image.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const VERSION = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version as string;
const TOOLS = ['mmdebstrap', 'skopeo', 'umoci', 'runc', 'tar'];
const missing = TOOLS.filter((t) => !existsSync(`/usr/bin/${t}`) && !existsSync(`/usr/sbin/${t}`));
const skip =
  process.getuid?.() !== 0
    ? 'runc runs a container as root only on these machines (rootless needs cgroup v2 delegation)'
    : missing.length > 0
      ? `missing ${missing.join(', ')} (hack/debian-packages.sh installs them)`
      : false;
if (skip) console.log(`# image: skipped: ${skip}`);

const dir = mkdtempSync(join(tmpdir(), 'nw-image-'));
const archive = join(dir, 'nodewarden.tar');
const bundle = join(dir, 'bundle');
after(() => rmSync(dir, { recursive: true, force: true }));

/** Runs the image's entrypoint, or `args` in its place, under runc; answers stdout. */
function runInImage(args: { entrypointArgs?: string[]; argv?: string[] }): string {
  const configPath = join(bundle, 'config.json');
  const config = JSON.parse(readFileSync(configPath, 'utf8'));
  const entrypoint = OPERATOR_RUN_CONFIG.Entrypoint ?? [];
  config.process.args = args.argv ?? [...entrypoint, ...(args.entrypointArgs ?? [])];
  config.process.terminal = false;
  writeFileSync(configPath, JSON.stringify(config));
  const id = `nw-image-${process.pid}`;
  try {
    return execFileSync('runc', ['run', '--bundle', bundle, id], { timeout: 60_000 }).toString();
  } finally {
    execFileSync('runc', ['delete', '--force', id], { stdio: 'ignore' });
  }
}

/** The Dockerfile's last stage: its instructions by name, continuation lines joined. */
function runtimeStage(): { instruction: string; args: string }[] {
  const text = readFileSync(join(ROOT, 'Dockerfile'), 'utf8').replace(/\\\n\s*/g, ' ');
  const lines = text.split('\n').filter((l) => l.trim() && !l.trim().startsWith('#'));
  const last = lines.findLastIndex((l) => /^FROM\s/i.test(l));
  return lines.slice(last + 1).map((l) => {
    const [instruction = '', ...rest] = l.trim().split(/\s+/);
    return { instruction: instruction.toUpperCase(), args: rest.join(' ') };
  });
}

describe('the operator image', { skip }, () => {
  before(
    () => {
      execFileSync('bash', [join(ROOT, 'hack/build-image.sh'), archive], { cwd: ROOT, stdio: 'inherit' });
      const layout = join(dir, 'layout');
      execFileSync('mkdir', ['-p', layout]);
      execFileSync('tar', ['-xf', archive, '-C', layout]);
      execFileSync('umoci', ['unpack', '--image', `${layout}:${VERSION}`, bundle]);
    },
    { timeout: 900_000 },
  );

  it('is read by skopeo: its name, three layers and the run config', () => {
    const raw = JSON.parse(
      execFileSync('skopeo', ['inspect', '--raw', `oci-archive:${archive}:${VERSION}`]).toString(),
    );
    assert.equal(raw.layers.length, 3);
    const config = JSON.parse(
      execFileSync('skopeo', ['inspect', '--config', `oci-archive:${archive}:${VERSION}`]).toString(),
    );
    const { Labels: _labels, ...run } = config.config;
    assert.deepEqual(run, OPERATOR_RUN_CONFIG);
    const index = JSON.parse(execFileSync('tar', ['-xOf', archive, 'index.json']).toString());
    assert.equal(index.manifests[0].annotations['io.containerd.image.name'], operatorImageName(VERSION));
  });

  it('runs under runc: the entrypoint answers `version`', () => {
    assert.match(runInImage({ entrypointArgs: ['version'] }), /^nodewarden \d+\.\d+\.\d+ \(node v24\./);
  });

  it("runs as the Dockerfile's user, in its folder, with its environment", () => {
    const out = runInImage({
      argv: [
        'node',
        '-e',
        'console.log(process.getuid(), process.getgid(), process.cwd(), process.env.NODE_ENV)',
      ],
    });
    const stage = runtimeStage();
    const user = stage.find((s) => s.instruction === 'USER')?.args.replace(':', ' ');
    const workdir = stage.find((s) => s.instruction === 'WORKDIR')?.args;
    assert.equal(out.trim(), `${user} ${workdir} production`);
  });

  it("has the Dockerfile's entrypoint, command and environment", () => {
    const stage = runtimeStage();
    const value = (name: string) => stage.find((s) => s.instruction === name)?.args;
    assert.deepEqual(JSON.parse(value('ENTRYPOINT') ?? ''), OPERATOR_RUN_CONFIG.Entrypoint);
    assert.deepEqual(JSON.parse(value('CMD') ?? ''), OPERATOR_RUN_CONFIG.Cmd);
    const env = [...(value('ENV') ?? '').matchAll(/(\w+)=("[^"]*"|\S+)/g)].map(
      ([, k, v]) => `${k}=${v?.replace(/^"|"$/g, '')}`,
    );
    assert.deepEqual(
      env,
      (OPERATOR_RUN_CONFIG.Env ?? []).filter((e) => !e.startsWith('PATH=')),
    );
  });

  it("holds the files the Dockerfile copies, the repository's byte for byte, and no dev dependency", () => {
    const rootfs = join(bundle, 'rootfs');
    const copies = runtimeStage().filter((s) => s.instruction === 'COPY');
    for (const { args } of copies) {
      const dest = args.split(/\s+/).at(-1) ?? '';
      const target = dest.startsWith('/') ? dest : join('/app', dest);
      assert.ok(existsSync(join(rootfs, target)), `${target} (COPY ${args})`);
      if (!args.includes('--from')) {
        const source = args.split(/\s+/)[0] ?? '';
        if (source === 'bin') {
          for (const f of readdirSync(join(ROOT, 'bin'))) {
            assert.ok(
              readFileSync(join(rootfs, target, f)).equals(readFileSync(join(ROOT, 'bin', f))),
              `bin/${f}`,
            );
          }
        } else {
          assert.ok(readFileSync(join(rootfs, target)).equals(readFileSync(join(ROOT, source))), source);
        }
      }
    }
    assert.ok(existsSync(join(rootfs, 'usr/local/bin/node')), 'node where node:24-slim has it');
    // The lockfile marks what only development needs (dev: true); a dependency of both is production's.
    const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as {
      packages: Record<string, { dev?: boolean; optional?: boolean }>;
    };
    const top = Object.entries(lock.packages).filter(([p]) => /^node_modules\/(@[^/]+\/)?[^/]+$/.test(p));
    const dev = top.filter(([, p]) => p.dev).map(([p]) => p);
    assert.ok(dev.includes('node_modules/typescript'));
    for (const p of dev) assert.ok(!existsSync(join(rootfs, 'app', p)), `${p} is a dev dependency`);
    for (const [p] of top.filter(([, p]) => !p.dev && !p.optional))
      assert.ok(existsSync(join(rootfs, 'app', p)), p);
  });
});
