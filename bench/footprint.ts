// Footprint, side by side with the tools platform engineers use today, in one run:
//   - CLI commands that talk to no cluster (--help, version, cluster kubeconfig) vs `kubectl version --client`
//   - `maintenance status NODE` / `upgrade status` vs `kubectl get` of the same object, and the
//     other capabilities' lists (`baremetal hosts`, `kvm list`, `tenant list`) vs `kubectl get -A`
//   - the same through kubectl's plugin mechanism (`kubectl nodewarden ...`, bin/kubectl-nodewarden)
//   - the local cluster's simulator daemons (cloud, BMC fleet): RSS now and peak (VmHWM)
//   - the operator's peak RSS vs medik8s NMO's, from ../shared/peers/nmo/run.sh when it is there
// Each command runs RUNS times (default 5); the table gives medians. Wall time and peak RSS come
// from /usr/bin/time. The figures are those of bin/nodewarden: from dist/ after `make build`.
// Env: RUNS, NMO_RUN (path of run.sh; "" to skip the operator row, which takes ~10 minutes).
import { type ExecFileSyncOptions, execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { benchClusters } from './harness.ts';

const { poolsForNodeCount } = await import('../src/cluster/fleet.ts');

const ROOT = join(import.meta.dirname, '..');
const NW = join(ROOT, 'bin', 'nodewarden');
const RUNS = Number(process.env.RUNS ?? 5);
const NMO_RUN = process.env.NMO_RUN ?? join(ROOT, '..', 'shared', 'peers', 'nmo', 'run.sh');

interface Figure {
  wall: number;
  rssMiB: number;
}

/** Median wall seconds and peak RSS of `RUNS` runs of a command (its output discarded). */
function measure(cmd: string, args: string[], env: NodeJS.ProcessEnv = process.env): Figure {
  const runs: Figure[] = [];
  for (let i = 0; i < RUNS; i++) {
    const r = spawnSync('/usr/bin/time', ['-f', '%e %M', cmd, ...args], { env, encoding: 'utf8' });
    const last = r.stderr.trim().split('\n').at(-1) ?? '';
    const [wall, kib] = last.split(' ').map(Number);
    if (r.status !== 0 || wall === undefined || kib === undefined || Number.isNaN(kib))
      throw new Error(`${cmd} ${args.join(' ')} failed (${r.status}): ${r.stderr.slice(-400)}`);
    runs.push({ wall, rssMiB: kib / 1024 });
  }
  const median = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;
  return { wall: median(runs.map((r) => r.wall)), rssMiB: median(runs.map((r) => r.rssMiB)) };
}

async function retry(f: () => unknown): Promise<void> {
  for (let i = 1; ; i++) {
    try {
      f();
      return;
    } catch (err) {
      if (i === 60) throw err;
      await new Promise((r) => setTimeout(r, 1000));
    }
  }
}

const rows: string[][] = [];
function row(what: string, ours: Figure | string, anchorName: string, anchor: Figure | string, goal: string) {
  const fmt = (f: Figure | string) =>
    typeof f === 'string' ? f : `${f.wall.toFixed(2)} s, ${f.rssMiB.toFixed(0)} MiB`;
  const ratio =
    typeof ours === 'string' || typeof anchor === 'string'
      ? '-'
      : `${(ours.wall / anchor.wall).toFixed(1)}× wall, ${(ours.rssMiB / anchor.rssMiB).toFixed(1)}× RSS`;
  rows.push([what, fmt(ours), anchorName, fmt(anchor), ratio, goal]);
}

/** VmRSS and VmHWM (peak) of the simulator daemons of this state folder, by their entry script. */
function daemons(stateDir: string): { name: string; from: string; rss: number; hwm: number }[] {
  const found = [];
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    let cmdline: string;
    try {
      cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    } catch {
      continue;
    }
    const m = /infra\/(\w+)\/entry\.([jt]s)/.exec(cmdline);
    if (!m || !cmdline.includes(stateDir)) continue;
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kib = (k: string) => Number(new RegExp(`${k}:\\s+(\\d+)`).exec(status)?.[1] ?? 0);
    found.push({
      name: m[1]!,
      from: m[2] === 'js' ? 'dist' : 'src',
      rss: kib('VmRSS') / 1024,
      hwm: kib('VmHWM') / 1024,
    });
  }
  return found;
}

/** Peak RSS per scenario for NMO and nodewarden, from run.sh's results/*.json. */
function operatorFromNmoRun(): Map<string, { nmo?: number; nw?: number }> {
  const work = join(process.env.NODEWARDEN_STATE_DIR!, 'nmo');
  execFileSync('bash', [NMO_RUN, ROOT], {
    stdio: ['ignore', 'ignore', 'inherit'],
    env: { ...process.env, A_REPEAT: process.env.A_REPEAT ?? '1', WORK: work, CLUSTER: 'footprint-nmo' },
  });
  const byScenario = new Map<string, { nmo?: number; nw?: number }>();
  for (const f of readdirSync(join(work, 'results')).filter((f) => f.endsWith('.json'))) {
    const r = JSON.parse(readFileSync(join(work, 'results', f), 'utf8')) as {
      contender: string;
      scenario: string;
      rssPeakMiB: number;
    };
    const scenario = r.scenario.replace(/\d+$/, '').toUpperCase();
    const e = byScenario.get(scenario) ?? {};
    // Scenario A repeats: keep each contender's highest peak.
    if (r.contender === 'nmo') e.nmo = Math.max(e.nmo ?? 0, r.rssPeakMiB);
    if (r.contender === 'nw') e.nw = Math.max(e.nw ?? 0, r.rssPeakMiB);
    byScenario.set(scenario, e);
  }
  return byScenario;
}

const { clusters, cleanup } = await benchClusters();
try {
  const bins = clusters.binaries();
  const kubectl = bins.kubectl;
  const name = 'footprint';
  console.error(`cluster up ${name} (3 nodes, 24 bare-metal hosts) ...`);
  // 24 bare-metal hosts so the BMC fleet daemon runs too, with a rack's worth of machines.
  await clusters.up({
    name,
    pools: poolsForNodeCount(3),
    timeoutMs: 300_000,
    infraFlags: { 'bare-metal-hosts': '24:racks=2' },
  });
  const kubeconfig = clusters.kubeconfigPath(name);
  const env = { ...process.env, KUBECONFIG: kubeconfig };
  const from =
    existsSync(join(ROOT, 'dist', 'cmd', 'main.js')) && !process.env.NODEWARDEN_FROM_SOURCE ? 'dist' : 'src';

  const kubectlVersion = measure(kubectl, ['version', '--client']);
  for (const args of [['--help'], ['version'], ['cluster', 'kubeconfig', '--name', name]])
    row(
      `nodewarden ${args.join(' ')} (${from})`,
      measure(NW, args, env),
      'kubectl version --client',
      kubectlVersion,
      '≤ 2×',
    );

  // kubectl finds the plugin (bin/kubectl-nodewarden) on PATH and execs it in its own process.
  const plugin = { ...env, PATH: `${join(ROOT, 'bin')}:${process.env.PATH ?? ''}` };
  row(
    'kubectl nodewarden version (plugin)',
    measure(kubectl, ['nodewarden', 'version'], plugin),
    'kubectl version --client',
    kubectlVersion,
    '≤ 2×',
  );

  const quiet: ExecFileSyncOptions = { env, stdio: ['ignore', 'ignore', 'inherit'] };
  execFileSync(join(ROOT, 'hack', 'install-crds.sh'), [kubectl, 'install'], quiet);
  execFileSync(kubectl, ['wait', '--for', 'condition=established', 'crd', '--all', '--timeout=60s'], quiet);
  const node = JSON.parse(
    execFileSync(kubectl, ['get', 'nodes', '-o', 'json'], { env, encoding: 'utf8' }),
  ) as {
    items: { metadata: { name: string } }[];
  };
  const nodeName = node.items[0]!.metadata.name;
  // Established is not yet served everywhere: the first create can still meet a 404.
  await retry(() => execFileSync(NW, ['maintenance', 'start', nodeName, '--reason', 'footprint'], quiet));
  const nm = execFileSync(kubectl, ['get', 'nodemaintenances.maintenance.nodewarden.dev', '-o', 'name'], {
    env,
    encoding: 'utf8',
  })
    .trim()
    .split('\n')[0]!;
  const kubectlGetNm = measure(kubectl, ['get', nm], env);
  row(
    `nodewarden maintenance status ${nodeName}`,
    measure(NW, ['maintenance', 'status', nodeName], env),
    `kubectl get ${nm}`,
    kubectlGetNm,
    '≤ 1.5×',
  );
  row(
    `kubectl nodewarden maintenance status ${nodeName} (plugin)`,
    measure(kubectl, ['nodewarden', 'maintenance', 'status', nodeName], plugin),
    `kubectl get ${nm}`,
    kubectlGetNm,
    '≤ 1.5×',
  );
  await retry(() => execFileSync(NW, ['upgrade', 'start', '--image', 'footprint-image'], quiet));
  const kubectlGetNv = measure(kubectl, ['get', 'nodeversions.upgrade.nodewarden.dev', 'default'], env);
  row(
    'nodewarden upgrade status',
    measure(NW, ['upgrade', 'status'], env),
    'kubectl get nodeversions default',
    kubectlGetNv,
    '≤ 1.5×',
  );
  row(
    'kubectl nodewarden upgrade status (plugin)',
    measure(kubectl, ['nodewarden', 'upgrade', 'status'], plugin),
    'kubectl get nodeversions default',
    kubectlGetNv,
    '≤ 1.5×',
  );

  // The other capabilities' commands, each listing its kind across namespaces: the
  // fleet's BareMetalHosts, and no KVMCluster or TenantCluster (the cost of the command).
  for (const [command, plural] of [
    [['baremetal', 'hosts'], 'baremetalhosts.metal3.io'],
    [['kvm', 'list'], 'kvmclusters.kvm.nodewarden.dev'],
    [['tenant', 'list'], 'tenantclusters.baremetal.nodewarden.dev'],
  ] as const)
    row(
      `nodewarden ${command.join(' ')}`,
      measure(NW, [...command], env),
      `kubectl get ${plural.split('.')[0]} -A`,
      measure(kubectl, ['get', plural, '-A'], env),
      '≤ 1.5×',
    );

  for (const d of daemons(process.env.NODEWARDEN_STATE_DIR!))
    rows.push([
      `${d.name} simulator daemon (${d.from})`,
      `${d.rss.toFixed(0)} MiB now, ${d.hwm.toFixed(0)} MiB peak`,
      '-',
      '-',
      '-',
      '≤ 80 MiB',
    ]);
  await clusters.delete(name);

  if (NMO_RUN && existsSync(NMO_RUN)) {
    console.error(`operator vs NMO: ${NMO_RUN} (A once; ~10 minutes) ...`);
    for (const [scenario, e] of [...operatorFromNmoRun()].sort()) {
      const ours = e.nw === undefined ? 'n/a' : `${e.nw.toFixed(0)} MiB peak`;
      const theirs = e.nmo === undefined ? 'n/a' : `${e.nmo.toFixed(0)} MiB peak`;
      const ratio = e.nw && e.nmo ? `${(e.nw / e.nmo).toFixed(1)}× RSS` : '-';
      rows.push([`operator, drain scenario ${scenario}`, ours, 'medik8s NMO', theirs, ratio, '≤ 1.5×']);
    }
  } else
    rows.push(['operator vs NMO', 'skipped', 'medik8s NMO', `no ${NMO_RUN || 'NMO_RUN'}`, '-', '≤ 1.5×']);
} finally {
  await cleanup();
}

const head = ['what', 'nodewarden', 'anchor', 'anchor figure', 'ratio', 'goal'];
console.log(`| ${head.join(' | ')} |\n| ${head.map(() => '---').join(' | ')} |`);
for (const r of rows) console.log(`| ${r.join(' | ')} |`);
