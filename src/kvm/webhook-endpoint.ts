// Where the KVMCluster webhook answers and its name in the configuration:
// declared with the capability, apart from the handler, which loads only
// where the operator serves it.
export const KVM_WEBHOOK_PATH = '/validate-kvm-nodewarden-dev-v1alpha1-kvmcluster';
export const KVM_WEBHOOK_NAME = 'vkvmcluster.kvm.nodewarden.dev';
