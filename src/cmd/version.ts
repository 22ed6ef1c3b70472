import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { binaryVersion, controlPlaneBinaries, pinnedVersions, REPO_ROOT } from '../cluster/toolchain.ts';

/** `nodewarden version [--binaries]`: our version and the pinned control plane. */
export async function versionCommand(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: { binaries: { type: 'boolean' }, help: { type: 'boolean' } },
  });
  if (values.help) {
    console.log(
      'Usage: nodewarden version [--binaries]\n\n  --binaries  also ask each built binary for its version (builds them if needed)',
    );
    return 0;
  }
  const pkg = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string };
  const pins = pinnedVersions();
  console.log(`nodewarden ${pkg.version} (node ${process.version})`);
  console.log(`kubernetes ${pins.kube}, etcd ${pins.etcd}, kwok ${pins.kwok}`);
  if (values.binaries) {
    const bins = await controlPlaneBinaries();
    for (const [name, path] of Object.entries(bins)) {
      console.log(
        `  ${name.padEnd(24)} ${name === 'kubectl' ? '(client)' : await binaryVersion(path).catch((e: Error) => e.message)}`,
      );
    }
  }
  return 0;
}
