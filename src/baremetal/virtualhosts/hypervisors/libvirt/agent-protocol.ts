// The VM host agent's own calls, beside Redfish on its listener: what the
// libvirt Hypervisor (hypervisors.ts) asks of the agent (agent.ts). POST
// agentPaths.vms with a VmDefinition defines a VM (200 with its HeldVm; the
// same definition again is a no-op, another a 409); GET lists the HeldVms;
// DELETE agentPaths.vm(id) removes one (204, also when it is not there).
// Errors answer {"error": "..."}.

export const AGENT_CONSOLE = '/nodewarden/vm-host/v1';

export const agentPaths = {
  vms: `${AGENT_CONSOLE}/vms`,
  vm: (id: string) => `${AGENT_CONSOLE}/vms/${encodeURIComponent(id)}`,
} as const;

/** Where the agents are published: a ConfigMap in kube-system, one key per node. */
export const AGENTS_CONFIGMAP = 'nodewarden-vm-host-agents';
export const AGENTS_NAMESPACE = 'kube-system';

/** A node's agent as published (the ConfigMap's value for the node, as JSON). */
export interface PublishedAgent {
  /** https://127.0.0.1:PORT */
  endpoint: string;
  /** The CA its certificate is signed by (PEM). */
  caCert: string;
}
