// The env a worker's VM pod gets, as desired-node.ts renders it, for the VM image's unit tests.
export const WORKER_ENV = {
  CORES: '2',
  MEMORY: '2048M',
  ROLE: 'worker',
  OS_IMAGE: 'debian',
  OS_VERSION: '4230.2.0',
  DISK_OS: '20G',
  DISK_DOCKER: '50G',
  DISK_KUBELET: '5G',
  HOSTNAME: 'worker-w1-7d9f-x2',
  HEALTH_PORT: '23007',
  GRACE_SECONDS: '600',
};
