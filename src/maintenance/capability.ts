// The maintenance capability as the operator sees it: its name for
// --controllers, the RBAC it needs (merged into the ClusterRole by
// `make manifests`), and its wiring.
import type { ControllerRegistration } from '../operator/controllers.ts';
import { setupNodeMaintenance } from './controller.ts';

export const maintenanceController: ControllerRegistration = {
  name: 'nodemaintenance',
  description: 'NodeMaintenance: cordon, taint and drain a node; restore it when the object is deleted',
  rbac: [
    {
      apiGroups: ['maintenance.nodewarden.dev'],
      resources: ['nodemaintenances'],
      verbs: ['get', 'list', 'watch', 'patch', 'update'],
    },
    {
      apiGroups: ['maintenance.nodewarden.dev'],
      resources: ['nodemaintenances/status'],
      verbs: ['get', 'patch', 'update'],
    },
    {
      apiGroups: ['maintenance.nodewarden.dev'],
      resources: ['nodemaintenances/finalizers'],
      verbs: ['update'],
    },
    { apiGroups: [''], resources: ['nodes'], verbs: ['get', 'list', 'watch', 'patch'] },
    { apiGroups: [''], resources: ['pods'], verbs: ['get', 'list', 'watch', 'delete'] },
    { apiGroups: [''], resources: ['pods/eviction'], verbs: ['create'] },
    // Node leases live in a namespace the user picks (--maintenance-lease-namespace), so the rule is cluster-wide.
    {
      apiGroups: ['coordination.k8s.io'],
      resources: ['leases'],
      verbs: ['get', 'create', 'update', 'delete'],
    },
    // The validating webhook: keep its caBundle current (create only for a local out-of-cluster run).
    {
      apiGroups: ['admissionregistration.k8s.io'],
      resources: ['validatingwebhookconfigurations'],
      verbs: ['get', 'update'],
      resourceNames: ['nodewarden-validating-webhook-configuration'],
    },
    {
      apiGroups: ['admissionregistration.k8s.io'],
      resources: ['validatingwebhookconfigurations'],
      verbs: ['create'],
    },
  ],
  setup(mgr, options) {
    setupNodeMaintenance(mgr, {
      lease: {
        namespace: options.maintenanceLeaseNamespace,
        holder: 'nodewarden-maintenance',
        durationSeconds: 3600,
      },
    });
  },
};
