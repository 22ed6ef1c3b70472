// Writes an image archive and prints its name, digest and size. Four kinds:
//   --out FILE --base DIR --node FILE --dist DIR --modules DIR --packages LIST
//       the operator's image (hack/build-image.sh gathers the inputs);
//   --out FILE --vm --base DIR --os DIR --node FILE --dist DIR --scripts DIR --packages LIST
//       the VM image (hack/build-vm-image.sh);
//   --out FILE --static BINARY --name NAME [--user USER]
//       one static binary as an image (hack/build-node-runtime.sh: pause, CoreDNS, the test app);
//   --out FILE --service jumphost|haproxy --base DIR --packages LIST [--helper FILE]
//       a tenant support service's image (hack/build-service-images.sh).
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import {
  HAPROXY_IMAGE_REPOSITORY,
  JUMPHOST_IMAGE_REPOSITORY,
  serviceImageName,
} from '../../api/service-images.ts';
import { vmImageName } from '../../api/vm-image.ts';
import type { BuiltImage } from './oci.ts';
import { buildOperatorImage, operatorImageName } from './operator-image.ts';
import { buildHAProxyImage, buildJumpHostImage } from './service-images.ts';
import { buildStaticImage } from './static-image.ts';
import { buildVmImage } from './vm-image.ts';

const ROOT = join(import.meta.dirname, '../../..');
const USAGE =
  'usage: --out FILE (--base DIR --node FILE --dist DIR --modules DIR [--packages LIST] | --vm --base DIR --os DIR --node FILE --dist DIR --scripts DIR [--packages LIST] | --static FILE --name NAME [--user USER] | --service jumphost|haproxy --base DIR --packages LIST [--helper FILE])';

function main(): void {
  const { values } = parseArgs({
    options: {
      out: { type: 'string' },
      base: { type: 'string' },
      node: { type: 'string' },
      modules: { type: 'string' },
      dist: { type: 'string' },
      packages: { type: 'string', default: '' },
      static: { type: 'string' },
      name: { type: 'string' },
      user: { type: 'string' },
      vm: { type: 'boolean' },
      os: { type: 'string' },
      scripts: { type: 'string' },
      service: { type: 'string' },
      helper: { type: 'string' },
    },
  });
  // SOURCE_DATE_EPOCH (reproducible-builds.org): the time every file and date in the image carries.
  const created = Number(process.env.SOURCE_DATE_EPOCH ?? 0);
  const { out } = values;
  if (!out) throw new Error(USAGE);
  const [name, image] = values.static
    ? staticImage(values, created)
    : values.vm
      ? vmImage(values, created)
      : values.service
        ? serviceImage(values, created)
        : operatorImage(values, created);
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, image.archive);
  const mib = (n: number) => (n / 2 ** 20).toFixed(1);
  const layers = image.layerBytes.map(mib).join(' + ');
  console.log(`${name} ${image.digest}`);
  console.log(
    `layers ${layers} MiB compressed = ${mib(image.layerBytes.reduce((a, b) => a + b, 0))} MiB; ${out}`,
  );
}

type Args = Partial<
  Record<
    | 'base'
    | 'node'
    | 'modules'
    | 'dist'
    | 'packages'
    | 'static'
    | 'name'
    | 'user'
    | 'os'
    | 'scripts'
    | 'service'
    | 'helper',
    string
  >
>;

function appVersion(): string {
  return (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
}

function vmImage(values: Args, created: number): [string, BuiltImage] {
  const { base, os, node, dist, scripts } = values;
  if (!base || !os || !node || !dist || !scripts) throw new Error(USAGE);
  const version = appVersion();
  const image = buildVmImage({
    base,
    os,
    node,
    dist,
    scripts,
    version,
    created,
    basePackages: values.packages ?? '',
  });
  return [vmImageName(version), image];
}

function operatorImage(values: Args, created: number): [string, BuiltImage] {
  const { base, node, modules, dist } = values;
  if (!base || !node || !modules || !dist) throw new Error(USAGE);
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
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
  return [operatorImageName(pkg.version), image];
}

function staticImage(values: Args, created: number): [string, BuiltImage] {
  const { static: binary, name, user } = values;
  if (!binary || !name) throw new Error(USAGE);
  return [name, buildStaticImage({ binary, name, created, ...(user ? { user } : {}) })];
}

function serviceImage(values: Args, created: number): [string, BuiltImage] {
  const { service, base, packages, helper } = values;
  if (!base || !packages) throw new Error(USAGE);
  const version = appVersion();
  const inputs = { base, packages, version, created };
  if (service === 'haproxy')
    return [serviceImageName(HAPROXY_IMAGE_REPOSITORY, version), buildHAProxyImage(inputs)];
  if (service !== 'jumphost' || !helper) throw new Error(USAGE);
  const image = buildJumpHostImage({ ...inputs, hostHelper: readFileSync(helper, 'utf8') });
  return [serviceImageName(JUMPHOST_IMAGE_REPOSITORY, version), image];
}

main();
