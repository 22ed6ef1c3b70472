// The two load balancers of a TenantCluster, decided from its spec and hosts:
// the control plane's (every control-plane host, standbys too as in the
// anchor, on the API port behind spec.nodePort) and the workers' (every
// worker on each port of spec.nodePortRange, Service port = node port as in
// the anchor). A problem leaves the service out rather than render it wrong.
import {
  API_SERVER_PORT,
  type Backend,
  renderControlPlaneConfig,
  renderWorkerConfig,
} from './haproxy-config.ts';
import { haproxyObjects } from './haproxy-objects.ts';
import { type ClaimedHost, clusterKey, type TenantCluster } from './inputs.ts';
import { missingAddress, nameProblem, type Rendered } from './objects.ts';
import { TemplateError } from './template.ts';

/** The API's own bound (CEL on nodePortRange), kept here too so a render never builds a runaway Service. */
export const MAX_WORKER_PORTS = 256;
/** A Secret holds at most 1 MiB; a config half that size is a runaway template. */
const MAX_CONFIG_BYTES = 512 * 1024;

/** Each host of the role with its address on the interface, or why one has none. */
export function backendsOf(
  hosts: readonly ClaimedHost[],
  role: ClaimedHost['role'],
  interfaceId: string,
): { backends: Backend[]; problem?: string } {
  const backends: Backend[] = [];
  const missing: string[] = [];
  for (const h of hosts) {
    if (h.role !== role) continue;
    const ip = h.ips[interfaceId];
    if (ip) backends.push({ name: h.name, ip });
    else missing.push(h.name);
  }
  return missing.length === 0 ? { backends } : { backends, problem: missingAddress(missing, interfaceId) };
}

function renderConfig(render: () => string): { config: string; problem?: undefined } | { problem: string } {
  try {
    const config = render();
    if (Buffer.byteLength(config) > MAX_CONFIG_BYTES)
      return { problem: `the rendered haproxy.cfg is over ${MAX_CONFIG_BYTES} bytes` };
    return { config };
  } catch (err) {
    if (err instanceof TemplateError) return { problem: `template: ${err.message}` };
    throw err;
  }
}

function context(tc: TenantCluster) {
  const { name, namespace } = clusterKey(tc);
  return { cluster: name, namespace };
}

export function controlPlaneLoadBalancer(
  tc: TenantCluster,
  hosts: readonly ClaimedHost[],
  template?: string,
): Rendered | undefined {
  const spec = tc.spec.services?.controlPlaneLoadBalancer;
  if (!spec) return undefined;
  const bad = nameProblem(tc, 'controlplane-lb');
  if (bad) return { problem: bad };
  const { backends, problem } = backendsOf(hosts, 'ControlPlane', spec.nodeInterfaceId);
  if (problem) return { problem };
  const cfg = renderConfig(() => renderControlPlaneConfig(context(tc), backends, template));
  if (cfg.problem !== undefined) return { problem: cfg.problem };
  return {
    objects: haproxyObjects(tc, {
      component: 'controlplane-lb',
      config: cfg.config,
      image: spec.image,
      placement: spec.placement,
      ports: [
        { name: 'https', containerPort: API_SERVER_PORT, port: API_SERVER_PORT, nodePort: spec.nodePort },
      ],
    }),
  };
}

export function workerLoadBalancer(
  tc: TenantCluster,
  hosts: readonly ClaimedHost[],
  template?: string,
): Rendered | undefined {
  const spec = tc.spec.services?.workerLoadBalancer;
  if (!spec) return undefined;
  const bad = nameProblem(tc, 'worker-lb');
  if (bad) return { problem: bad };
  const { start, end } = spec.nodePortRange;
  if (!Number.isInteger(start) || !Number.isInteger(end) || end < start)
    return { problem: `nodePortRange ${start}-${end} is empty: end must be at least start` };
  if (end - start + 1 > MAX_WORKER_PORTS)
    return {
      problem: `nodePortRange ${start}-${end} has ${end - start + 1} ports, more than ${MAX_WORKER_PORTS}`,
    };
  const ports = Array.from({ length: end - start + 1 }, (_, i) => start + i);
  const { backends, problem } = backendsOf(hosts, 'Worker', spec.nodeInterfaceId);
  if (problem) return { problem };
  const cfg = renderConfig(() => renderWorkerConfig(context(tc), ports, backends, template));
  if (cfg.problem !== undefined) return { problem: cfg.problem };
  return {
    objects: haproxyObjects(tc, {
      component: 'worker-lb',
      config: cfg.config,
      image: spec.image,
      placement: spec.placement,
      ports: ports.map((p) => ({ name: `tcp-${p}`, containerPort: p, port: p, nodePort: p })),
    }),
  };
}
