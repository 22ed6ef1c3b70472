// Images of one static binary, for real nodes (hack/build-node-runtime.sh): the
// sandbox image kubelet asks for, CoreDNS, and the tests' workload. One layer
// holding the binary at /<name> and an empty /tmp; nothing else is needed by a
// program that links nothing.
import { basename } from 'node:path';
import { type BuiltImage, buildImage } from './oci.ts';
import { layerEntries } from './tree.ts';

export interface StaticImageInputs {
  /** The full name containerd lists it under, e.g. registry.k8s.io/pause:3.10.2. */
  name: string;
  /** The binary; it becomes /<its file name> and the entrypoint. */
  binary: string;
  /** The user it runs as (e.g. 65535 for pause, as upstream's image); the runtime's default otherwise. */
  user?: string;
  created: number;
}

export function buildStaticImage(inputs: StaticImageInputs): BuiltImage {
  const file = basename(inputs.binary);
  return buildImage({
    names: [inputs.name],
    created: inputs.created,
    layers: [
      {
        entries: [
          ...layerEntries([{ from: inputs.binary, to: file }]),
          { kind: 'dir', path: 'tmp', mode: 0o1777 },
        ],
        createdBy: `static binary ${file}`,
      },
    ],
    config: { ...(inputs.user ? { User: inputs.user } : {}), Entrypoint: [`/${file}`] },
  });
}
