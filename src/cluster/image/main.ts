// `node src/cluster/image/main.ts --out FILE --base DIR --node FILE --dist DIR --modules DIR --packages LIST`
// (run by hack/build-image.sh, which gathers the inputs): writes the operator's
// image archive and prints its digest and size.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { buildOperatorImage, operatorImageName } from './operator-image.ts';

const ROOT = join(import.meta.dirname, '../../..');

function main(): void {
  const { values } = parseArgs({
    options: {
      out: { type: 'string' },
      base: { type: 'string' },
      node: { type: 'string' },
      modules: { type: 'string' },
      dist: { type: 'string' },
      packages: { type: 'string', default: '' },
    },
  });
  const { out, base, node, modules, dist } = values;
  if (!out || !base || !node || !modules || !dist) {
    throw new Error('usage: --out FILE --base DIR --node FILE --dist DIR --modules DIR [--packages LIST]');
  }
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
  // SOURCE_DATE_EPOCH (reproducible-builds.org): the time every file and date in the image carries.
  const created = Number(process.env.SOURCE_DATE_EPOCH ?? 0);
  const image = buildOperatorImage({
    base,
    node,
    modules,
    dist,
    root: ROOT,
    version: pkg.version,
    created,
    basePackages: values.packages ?? '',
  });
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, image.archive);
  const mib = (n: number) => (n / 2 ** 20).toFixed(1);
  const layers = image.layerBytes.map(mib).join(' + ');
  console.log(`${operatorImageName(pkg.version)} ${image.digest}`);
  console.log(
    `layers ${layers} MiB compressed = ${mib(image.layerBytes.reduce((a, b) => a + b, 0))} MiB; ${out}`,
  );
}

main();
