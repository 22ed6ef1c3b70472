// Benchmark: how fast a local cluster comes up, and what it costs.
// Prints: the cold control-plane build time (recorded by the build), the time
// from `up` to N Ready nodes for fresh clusters of N = 10, 100, 1000 (binary
// cache warm), the time of a down/up restart, and the control plane's memory.
//
//   make bench                      all sizes
//   BENCH_SIZES=10,100 make bench   a subset
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { benchClusters } from './harness.ts';

const { poolsForNodeCount } = await import('../src/cluster/fleet.ts');

const sizes = (process.env.BENCH_SIZES ?? '10,100,1000').split(',').map(Number);
const t0 = performance.now();
const { clusters, cleanup } = await benchClusters();
const bins = clusters.binaries();
console.log(
  `control-plane binaries ready (cache check) in ${((performance.now() - t0) / 1000).toFixed(2)} s`,
);
const record = join(dirname(bins.etcd), 'build-seconds');
console.log(
  existsSync(record)
    ? `cold build of the control plane (recorded on this machine): ${readFileSync(record, 'utf8').trim()} s`
    : 'cold build time: not recorded (binaries came from NODEWARDEN_BIN_DIR)',
);

/** Resident memory of every process whose command line mentions the cluster's folder, by component. */
function controlPlaneMemory(clusterDir: string): Map<string, number> {
  const byComponent = new Map<string, number>();
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    try {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
      if (!cmd.some((a) => a.includes(clusterDir))) continue;
      const rss = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
      const component = (cmd[0] ?? '?').split('/').pop() ?? '?';
      byComponent.set(component, (byComponent.get(component) ?? 0) + Number(rss?.[1] ?? 0) / 1024);
    } catch {
      // the process went away while we looked
    }
  }
  return byComponent;
}

const rows: string[] = [];
try {
  for (const n of sizes) {
    const name = `bench-${n}`;
    const start = performance.now();
    await clusters.up({ name, pools: poolsForNodeCount(n), timeoutMs: 300_000 });
    const upSeconds = (performance.now() - start) / 1000;
    await new Promise((r) => setTimeout(r, 3000)); // let heartbeats settle before measuring memory
    const mem = controlPlaneMemory(clusters.dir(name));
    const total = [...mem.values()].reduce((a, b) => a + b, 0);
    const parts = [...mem.entries()].map(([k, v]) => `${k} ${v.toFixed(0)}`).join(', ');

    await clusters.down(name);
    const restart = performance.now();
    await clusters.up({ name, timeoutMs: 300_000 });
    const restartSeconds = (performance.now() - restart) / 1000;
    await clusters.delete(name);

    const row = `N=${String(n).padStart(4)}  up to N Ready: ${upSeconds.toFixed(1).padStart(5)} s   down+up restart: ${restartSeconds.toFixed(1).padStart(5)} s   control-plane RSS: ${total.toFixed(0)} MiB (${parts})`;
    console.log(row);
    rows.push(row);
  }
} finally {
  await cleanup();
}
console.log('\nsummary');
for (const r of rows) console.log(r);
