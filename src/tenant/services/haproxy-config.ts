// haproxy.cfg for the two load balancers: the built-in templates, the
// variables a template sees, and the rendering. Values follow the anchor
// (SIP's load balancers): /readyz over TLS without verification, checked every
// 5 s (2 s while down), out after 4 failures; connect 30 s, client/server 600 s.
// Variables (documented for users writing their own template):
//   both:          cluster, namespace
//   control plane: frontendPort (6443), backends[] {name, ip, host, port, address}
//   worker:        ports[] {port}, backends[] {name, ip, host}
// host is ip with IPv6 in brackets, address is host:port; every list is
// sorted (backends by name, ports ascending) so the same hosts give the same
// config. The syntax is template.ts's.
import { isIPv6 } from 'node:net';
import { renderTemplate, type TemplateScope } from './template.ts';

export const API_SERVER_PORT = 6443;

const PREAMBLE = `global
  log stdout format raw local0

defaults
  log global
  mode tcp
  option tcplog
  timeout connect 30s
  timeout client 600s
  timeout server 600s
`;

export const DEFAULT_CONTROL_PLANE_TEMPLATE = `# TenantCluster {{namespace}}/{{cluster}}: its API servers behind one port.
${PREAMBLE}
frontend kube-apiserver
  bind :{{frontendPort}}
  default_backend kube-apiserver

backend kube-apiserver
  option httpchk GET /readyz
  http-check expect status 200
  default-server check check-ssl verify none inter 5s downinter 2s fall 4
  {{#each backends}}
  server {{name}} {{address}}
  {{/each}}
`;

export const DEFAULT_WORKER_TEMPLATE = `# TenantCluster {{namespace}}/{{cluster}}: each node port to the same port on every worker.
${PREAMBLE}{{#each ports}}

frontend worker-{{port}}
  bind :{{port}}
  default_backend worker-{{port}}

backend worker-{{port}}
  option tcp-check
  tcp-check connect
  default-server check inter 5s downinter 2s fall 4
  {{#each backends}}
  server {{name}} {{host}}:{{port}}
  {{/each}}
{{/each}}
`;

export interface Backend {
  name: string;
  ip: string;
}

function backendScopes(backends: readonly Backend[], port?: number): TemplateScope[] {
  return [...backends]
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .map(({ name, ip }): TemplateScope => {
      const host = isIPv6(ip) ? `[${ip}]` : ip;
      return port === undefined ? { name, ip, host } : { name, ip, host, port, address: `${host}:${port}` };
    });
}

export interface ConfigContext {
  cluster: string;
  namespace: string;
}

/** The control-plane load balancer's haproxy.cfg; throws TemplateError on a bad template. */
export function renderControlPlaneConfig(
  ctx: ConfigContext,
  backends: readonly Backend[],
  template = DEFAULT_CONTROL_PLANE_TEMPLATE,
): string {
  return renderTemplate(template, {
    ...ctx,
    frontendPort: API_SERVER_PORT,
    backends: backendScopes(backends, API_SERVER_PORT),
  });
}

/** The worker load balancer's haproxy.cfg, one frontend per port; throws TemplateError on a bad template. */
export function renderWorkerConfig(
  ctx: ConfigContext,
  ports: readonly number[],
  backends: readonly Backend[],
  template = DEFAULT_WORKER_TEMPLATE,
): string {
  return renderTemplate(template, {
    ...ctx,
    ports: [...ports].sort((a, b) => a - b).map((port) => ({ port })),
    backends: backendScopes(backends),
  });
}
