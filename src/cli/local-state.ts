// Where `nodewarden cluster` keeps its local clusters, and which of them a
// server address belongs to. A leaf: src/cluster builds on it, and the command
// kit reads it to say "nodewarden cluster up --name X" when a local cluster is
// stopped, without importing src/cluster.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { stateDir } from './local-paths.ts';

export { stateDir };

/** The local cluster whose own kubeconfig names `server` (same host and port), if one does. */
export function localClusterAt(address: string | URL): string | undefined {
  const server = new URL(address);
  const root = join(stateDir(), 'clusters');
  let names: string[];
  try {
    names = readdirSync(root);
  } catch {
    return undefined;
  }
  for (const name of names) {
    let doc: { clusters?: { cluster?: { server?: string } }[] } | undefined;
    try {
      doc = parse(readFileSync(join(root, name, 'kubeconfig.yaml'), 'utf8'));
    } catch {
      continue; // a folder being created or deleted
    }
    for (const c of doc?.clusters ?? []) {
      const url = URL.parse(c?.cluster?.server ?? '');
      if (url && url.host === server.host && url.protocol === server.protocol) return name;
    }
  }
  return undefined;
}
