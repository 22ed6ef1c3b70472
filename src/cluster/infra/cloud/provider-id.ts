// Provider IDs of the simulated cloud's instances, `nwsim://<group>/<instance>`,
// as Node.spec.providerID carries them (a real cloud's are aws:///zone/i-…).

export const PROVIDER_ID_SCHEME = 'nwsim://';

export function providerIDOf(groupId: string, instanceName: string): string {
  return `${PROVIDER_ID_SCHEME}${groupId}/${instanceName}`;
}

/** Splits `nwsim://<group>/<instance>`; undefined if it is not one of ours. */
export function parseProviderID(providerID: string): { groupId: string; instance: string } | undefined {
  if (!providerID.startsWith(PROVIDER_ID_SCHEME)) return undefined;
  const [groupId = '', instance = '', ...rest] = providerID.slice(PROVIDER_ID_SCHEME.length).split('/');
  if (rest.length > 0 || !groupId || !instance) return undefined;
  return { groupId, instance };
}
