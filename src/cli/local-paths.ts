// Where `nodewarden cluster` keeps its local clusters, as paths only: no YAML
// parser, no control-plane binaries. `nodewarden cluster kubeconfig` prints a
// path from here in the time of a bare Node process (bench/footprint.ts).
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

/** Cluster state lives here; binaries live in the build cache instead. */
export function stateDir(): string {
  return (
    process.env.NODEWARDEN_STATE_DIR ??
    join(process.env.XDG_STATE_HOME ?? join(homedir(), '.local', 'state'), 'nodewarden')
  );
}

/** The admin kubeconfig of the local cluster `name`, when that cluster exists. */
export function localKubeconfig(name: string): string | undefined {
  const dir = join(stateDir(), 'clusters', name);
  // kwok.yaml is what makes a folder a cluster (ControlPlanes.exists reads the same file).
  return existsSync(join(dir, 'kwok.yaml')) ? join(dir, 'kubeconfig.yaml') : undefined;
}
