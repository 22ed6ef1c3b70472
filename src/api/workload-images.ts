// The images a workload cluster's nodes run, named in one place: the KVM
// capability writes these names into its masters' static pods and its nodes'
// containerd config, and whatever builds the images (from the binaries
// hack/build-controlplane.sh already builds, one static binary per image at
// /<binary>, its entrypoint) tags them with the same names: the Debian OS image
// (hack/build-vm-os-image.sh) carries them and imports them on every boot. All
// carry the release's Kubernetes version: etcd and pause are the ones built with it.

/** Every image, in the order the OS image build packs them (hack/build-vm-os-image.sh reads this list). */
export const WORKLOAD_IMAGES = [
  'etcd',
  'kube-apiserver',
  'kube-controller-manager',
  'kube-scheduler',
  'pause',
] as const;

export type WorkloadImage = (typeof WORKLOAD_IMAGES)[number];

/** The name an image is built, loaded and run under, e.g. localhost/nodewarden-kube-apiserver:v1.37.1. */
export function workloadImage(component: WorkloadImage, kubernetesVersion: string): string {
  const version = kubernetesVersion.startsWith('v') ? kubernetesVersion : `v${kubernetesVersion}`;
  return `localhost/nodewarden-${component}:${version}`;
}

/** The program inside each image: its only file, /<name>. */
export function workloadBinary(component: WorkloadImage): string {
  return `/${component}`;
}
