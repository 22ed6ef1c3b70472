// The VM host agent's own calls, beside Redfish on its listener: what the
// libvirt Hypervisor (hypervisors.ts) asks of the agent (agent.ts). POST
// agentPaths.vms with a VmDefinition defines a VM (200 with its HeldVm; the
// same definition again is a no-op, another a 409); GET lists the HeldVms;
// DELETE agentPaths.vm(id) removes one (204, also when it is not there).
// Each takes `Authorization: Bearer <token>` (the published token); GET
// agentPaths.healthz takes none (kubelet's probes). Errors answer {"error": "..."}.

export const AGENT_CONSOLE = '/nodewarden/vm-host/v1';

export const agentPaths = {
  vms: `${AGENT_CONSOLE}/vms`,
  vm: (id: string) => `${AGENT_CONSOLE}/vms/${encodeURIComponent(id)}`,
  healthz: `${AGENT_CONSOLE}/healthz`,
} as const;

/** Where the agents are published: a Secret in kube-system (a record holds the console's token), one key per node. */
export const AGENTS_SECRET = 'nodewarden-vm-host-agents';
export const AGENTS_NAMESPACE = 'kube-system';

/** A node's agent as published (the Secret's value for the node, as JSON). */
export interface PublishedAgent {
  /** https://ADDRESS:PORT */
  endpoint: string;
  /** The CA its certificate is signed by (PEM). */
  caCert: string;
  /** The console's bearer token. */
  token: string;
}
