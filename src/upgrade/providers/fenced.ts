// A cloud whose changes stop when the leader's API writes do. WHY: a leader that loses its
// lease has its writes fenced, but a round under way went on calling the cloud: the fault soak
// saw two leaders, stepping down at their renew deadline, launch an instance 4 ms and 36 ms
// later, each from a view made while they could not reach the API server (seed 20261124, busy
// cores: 8 live instances in a group of 5 with a surge of 2). Reads go on, as the client's do.
import type { CloudProvider } from './interface.ts';

/** The provider's methods that change the cloud. */
const CHANGES = new Set<string>([
  'createNode',
  'deleteNode',
  'setScalingGroupImage',
] satisfies (keyof CloudProvider)[]);

/** `cloud`, with every change first asking `mayWrite` (which throws once writes are fenced). */
export function fencedCloud(cloud: CloudProvider, mayWrite: () => void): CloudProvider {
  return new Proxy(cloud, {
    get(target, prop, receiver) {
      const value: unknown = Reflect.get(target, prop, receiver);
      if (typeof value !== 'function') return value;
      if (typeof prop !== 'string' || !CHANGES.has(prop)) return value.bind(target);
      return async (...args: unknown[]) => {
        mayWrite();
        return value.apply(target, args);
      };
    },
  });
}
