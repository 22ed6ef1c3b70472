// Where an infrastructure machine template keeps the image its machines boot,
// per template kind: each Cluster API infrastructure provider names it its own
// way. An unknown kind without a configured path is refused, never guessed.

/** The image field of the templates of the common providers (a path below the template's root). */
export const KNOWN_IMAGE_PATHS: Readonly<Record<string, string>> = {
  AWSMachineTemplate: 'spec.template.spec.ami.id',
  AzureMachineTemplate: 'spec.template.spec.image.id',
  GCPMachineTemplate: 'spec.template.spec.image',
  OpenStackMachineTemplate: 'spec.template.spec.image.id',
  VSphereMachineTemplate: 'spec.template.spec.template',
  Metal3MachineTemplate: 'spec.template.spec.image.url',
  DockerMachineTemplate: 'spec.template.spec.customImage',
  NodewardenMachineTemplate: 'spec.template.spec.image',
};

const TEMPLATE_PREFIX = 'spec.template.';

/**
 * Parses --clusterapi-image-path: `Kind=path` pairs separated by commas, e.g.
 * "IBMPowerVSMachineTemplate=spec.template.spec.image.name". Throws on a malformed pair.
 */
export function parseImagePaths(flag: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const pair of (flag ?? '')
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean)) {
    const m = /^([A-Z][A-Za-z0-9]*)=(spec\.template\.spec(\.[A-Za-z0-9_-]+)+)$/.exec(pair);
    if (!m?.[1] || !m[2])
      throw new Error(
        `--clusterapi-image-path: "${pair}" is not Kind=spec.template.spec.<field>[.<field>...]`,
      );
    out[m[1]] = m[2];
  }
  return out;
}

/** The image path of a template kind: configured first, then known; undefined when neither says. */
export function imagePathOf(kind: string, configured: Readonly<Record<string, string>>): string | undefined {
  return configured[kind] ?? KNOWN_IMAGE_PATHS[kind];
}

/** The same field on a machine made from the template: its spec is the template's spec.template.spec. */
export function machineImagePath(templatePath: string): string {
  return templatePath.startsWith(TEMPLATE_PREFIX) ? templatePath.slice(TEMPLATE_PREFIX.length) : templatePath;
}

/** The value at a dotted path, when it is a string. */
export function getPath(obj: unknown, path: string): string | undefined {
  let cur: unknown = obj;
  for (const key of path.split('.')) {
    if (typeof cur !== 'object' || cur === null) return undefined;
    cur = (cur as Record<string, unknown>)[key];
  }
  return typeof cur === 'string' ? cur : undefined;
}

/** A deep copy of `obj` with `value` at the dotted path (objects made on the way). */
export function setPath<T>(obj: T, path: string, value: string): T {
  const copy = structuredClone(obj) as Record<string, unknown>;
  const keys = path.split('.');
  let cur = copy;
  for (const key of keys.slice(0, -1)) {
    const next = cur[key];
    if (typeof next !== 'object' || next === null) cur[key] = {};
    cur = cur[key] as Record<string, unknown>;
  }
  cur[keys[keys.length - 1] ?? ''] = value;
  return copy as T;
}
