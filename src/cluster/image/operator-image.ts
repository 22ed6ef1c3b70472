// The operator's image as `make image` builds it (hack/build-image.sh gathers
// the inputs): three layers, lowest first — the C libraries Node needs, from
// Debian's packages; the pinned Node binary; the app (dist/, bin/, production
// node_modules). It runs as the Dockerfile's image does: the same user,
// entrypoint, environment and files (test/integration/image.test.ts holds the
// two together).
import { join } from 'node:path';
import { type BuiltImage, buildImage, type ImageRunConfig } from './oci.ts';
import { layerEntries } from './tree.ts';

/**
 * The image's name: localhost/ says it was built here, not pulled from a registry
 * (containerd and the kubelet take it as it is); the tag is the app's version, as the
 * chart's appVersion and config/manager's default are.
 */
export const OPERATOR_IMAGE_REPOSITORY = 'localhost/nodewarden';
export const operatorImageName = (version: string) => `${OPERATOR_IMAGE_REPOSITORY}:${version}`;

/** What the image runs; the Dockerfile's runtime stage says the same. */
export const OPERATOR_RUN_CONFIG: ImageRunConfig = {
  User: '65532:65532',
  Env: [
    'PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
    'NODE_ENV=production',
    'MALLOC_ARENA_MAX=2',
    'NODE_OPTIONS=--enable-source-maps --max-semi-space-size=1',
  ],
  WorkingDir: '/app',
  Entrypoint: ['node', '--no-opt', '--no-maglev', '/app/dist/cmd/main.js'],
  Cmd: ['operator'],
};

/** The app's files taken from the repository as they are (dist/ and node_modules come built). */
export const APP_FILES = ['package.json', 'bin', 'hack/versions.env'] as const;

/** Paths of the Debian root file system no process in the image reads. */
export const BASE_SKIP =
  /^(dev|proc|sys|run|etc\/apt|var\/cache|var\/lib\/apt|var\/log|usr\/share\/(doc|man|info|lintian|locale))(\/|$)/;

export interface OperatorImageInputs {
  /** The Debian root file system (mmdebstrap's output folder). */
  base: string;
  /** The Node binary to ship (the pinned one). */
  node: string;
  /** The repository (package.json, bin/, hack/versions.env). */
  root: string;
  /** node_modules with production dependencies only. */
  modules: string;
  /** The compiled app (tsc -p tsconfig.build.json). */
  dist: string;
  version: string;
  created: number;
  /** Names the Debian packages of the base layer, for its history entry. */
  basePackages: string;
}

export function buildOperatorImage(inputs: OperatorImageInputs): BuiltImage {
  const app = [
    ...APP_FILES.map((f) => ({ from: join(inputs.root, f), to: `app/${f}` })),
    { from: inputs.dist, to: 'app/dist' },
    { from: inputs.modules, to: 'app/node_modules' },
  ];
  return buildImage({
    names: [operatorImageName(inputs.version)],
    created: inputs.created,
    layers: [
      {
        entries: layerEntries([{ from: inputs.base, to: '', skip: (p) => BASE_SKIP.test(p) }]),
        createdBy: `mmdebstrap --variant=extract --include=${inputs.basePackages}`,
      },
      { entries: layerEntries([{ from: inputs.node, to: 'usr/local/bin/node' }]), createdBy: 'node' },
      { entries: layerEntries(app), createdBy: 'nodewarden: dist, bin, production node_modules' },
    ],
    config: {
      ...OPERATOR_RUN_CONFIG,
      Labels: {
        'org.opencontainers.image.title': 'nodewarden',
        'org.opencontainers.image.version': inputs.version,
      },
    },
  });
}
