// `nodewarden cluster relay`: internal, started detached by `cluster up` for a
// cluster with real nodes (on the host, and inside the cluster's network
// namespace), never typed by a user, so left out of `cluster --help`. It loads
// nothing but node:net: one long-lived process per place, a few MiB each.
//
//   nodewarden cluster relay --forward unix:/c/api.sock=tcp:127.0.0.1:6443 \
//     --forward tcp:172.30.0.1:6443=unix:/c/api.sock \
//     --connect-proxy unix:/c/cluster.sock --allow 172.30.0.0/24 --allow 10.244.0.0/16
//
// Once every listener is up it writes one JSON line {"msg":"relay listening",…}
// on stdout, which its starter waits for; SIGTERM or SIGINT closes them all and
// exits 0.
import { BlockList, isIP } from 'node:net';
import { parseArgs } from 'node:util';
import { connectProxy, type Endpoint, formatEndpoint, forward, parseEndpoint, type Relay } from './relay.ts';

export const RELAY_USAGE = `Usage: nodewarden cluster relay [--forward LISTEN=TARGET]... [--connect-proxy LISTEN]... [--allow CIDR]...

Internal: relays a real node's network namespaces to the API server and back.
Endpoints are unix:/PATH or tcp:HOST:PORT.

  --forward LISTEN=TARGET  relay each connection on LISTEN to TARGET, both ways
  --connect-proxy LISTEN   an HTTP CONNECT proxy (the API server's egress selector)
  --allow CIDR             the proxies dial only addresses in these ranges (default: any)`;

export interface RelayPlan {
  forwards: { listen: Endpoint; target: Endpoint }[];
  proxies: Endpoint[];
  /** IPv4 or IPv6 ranges the proxies may dial; empty: any target. */
  allow: string[];
}

/** The command line read into what to listen on; throws a message for the user on a mistake. */
export function parseRelayArgs(args: string[]): RelayPlan {
  const { values, positionals } = parseArgs({
    args,
    options: {
      forward: { type: 'string', multiple: true },
      'connect-proxy': { type: 'string', multiple: true },
      allow: { type: 'string', multiple: true },
    },
    allowPositionals: true,
    strict: true,
  });
  if (positionals.length) throw new Error(`relay takes no arguments, got "${positionals.join(' ')}"`);
  const forwards = (values.forward ?? []).map((spec) => {
    const [listen, target, ...more] = spec.split('=');
    if (!listen || !target || more.length) throw new Error(`--forward "${spec}" is not LISTEN=TARGET`);
    return { listen: parseEndpoint(listen), target: parseEndpoint(target) };
  });
  const proxies = (values['connect-proxy'] ?? []).map(parseEndpoint);
  if (!forwards.length && !proxies.length)
    throw new Error('nothing to relay: give --forward or --connect-proxy');
  const allow = values.allow ?? [];
  allowList(allow); // refuses a malformed range now
  return { forwards, proxies, allow };
}

/** Whether a proxy may dial host:port: with ranges given, only IP addresses inside them. */
export function allowList(cidrs: readonly string[]): ((host: string) => boolean) | undefined {
  if (!cidrs.length) return undefined;
  const list = new BlockList();
  for (const cidr of cidrs) {
    const [address = '', bits, ...rest] = cidr.split('/');
    const family = isIP(address);
    const prefix = Number(bits);
    if (
      !family ||
      rest.length ||
      !Number.isInteger(prefix) ||
      prefix < 0 ||
      prefix > (family === 4 ? 32 : 128)
    )
      throw new Error(`--allow "${cidr}" is not an address range like 10.244.0.0/16`);
    list.addSubnet(address, prefix, family === 4 ? 'ipv4' : 'ipv6');
  }
  return (host) => {
    const family = isIP(host);
    return family !== 0 && list.check(host, family === 4 ? 'ipv4' : 'ipv6');
  };
}

/** Listens on everything the plan names; on a failure, closes what was opened and throws. */
export async function startRelays(plan: RelayPlan): Promise<Relay[]> {
  const allow = allowList(plan.allow);
  const relays: Relay[] = [];
  try {
    for (const f of plan.forwards) relays.push(await forward(f));
    for (const listen of plan.proxies)
      relays.push(await connectProxy({ listen, ...(allow ? { allow: (host) => allow(host) } : {}) }));
  } catch (err) {
    await Promise.all(relays.map((r) => r.close()));
    throw err;
  }
  return relays;
}

const logLine = (msg: string, fields: Record<string, unknown> = {}) =>
  `${JSON.stringify({ level: 'info', time: new Date().toISOString(), msg, ...fields })}\n`;

export async function relayCommand(args: string[]): Promise<number> {
  if (args.includes('--help') || args.includes('-h')) {
    process.stdout.write(`${RELAY_USAGE}\n`);
    return 0;
  }
  let plan: RelayPlan;
  try {
    plan = parseRelayArgs(args);
  } catch (err) {
    process.stderr.write(`nodewarden cluster relay: ${(err as Error).message}\n${RELAY_USAGE}\n`);
    return 2;
  }
  const relays = await startRelays(plan);
  process.stdout.write(
    logLine('relay listening', {
      pid: process.pid,
      forwards: plan.forwards.map(
        (f, i) => `${formatEndpoint(relays[i]!.address)}=${formatEndpoint(f.target)}`,
      ),
      proxies: relays.slice(plan.forwards.length).map((r) => formatEndpoint(r.address)),
    }),
  );
  const signal = await new Promise<NodeJS.Signals>((resolve) => {
    process.once('SIGTERM', resolve);
    process.once('SIGINT', resolve);
  });
  const open = relays.reduce((n, r) => n + r.connections, 0);
  await Promise.all(relays.map((r) => r.close()));
  process.stdout.write(logLine('relay stopped', { signal, connectionsClosed: open }));
  return 0;
}
