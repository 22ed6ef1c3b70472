// What every API-talking subcommand shares: how a usage mistake is reported,
// where output goes, how the kubeconfig is read, how durations are checked,
// and how a thrown error becomes an exit status. The verb table each
// capability's command is written as is in verbs.ts.
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { KubeClient } from '../runtime/client.ts';
import { parseDuration } from '../runtime/duration.ts';
import { ApiError, isUnknownResource } from '../runtime/errors.ts';
import { KubeConfig } from '../runtime/kubeconfig.ts';
import type { ResourceType } from '../runtime/resources.ts';
import { localClusterAt } from './local-state.ts';
import type { ProgressStream } from './progress.ts';

/** A mistake in the command line: reported with a pointer to --help, exit status 2. */
/** A `nodewarden <name>` command, as a capability or a simulator declares it. */
export interface CommandSpec {
  name: string;
  summary: string;
  run(args: string[]): Promise<number>;
}

export class UsageError extends Error {
  override name = 'UsageError';
}

/** A parse error of a flag's value, as a usage mistake (exit 2). */
export function asUsage<T>(parse: () => T): T {
  try {
    return parse();
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
}

/** Where the command writes: stdout for results, stderr for progress and errors. */
export interface CommandIO {
  out: ProgressStream;
  err: ProgressStream;
}

export const STDIO: CommandIO = { out: process.stdout, err: process.stderr };

/** Milliseconds in a Go-style duration flag ("90s", "1h30m", "0"); UsageError when malformed. */
export function durationFlag(text: string, flag: string): number {
  try {
    return parseDuration(text);
  } catch {
    throw new UsageError(`${flag} "${text}" is not a duration like 90s, 10m or 1h30m`);
  }
}

/** A client from --kubeconfig, else $KUBECONFIG, ~/.kube/config or the in-cluster account. */
export function connect(kubeconfig: string | undefined, context: string | undefined): KubeClient {
  const kc = new KubeConfig();
  const env = process.env.KUBECONFIG || undefined;
  // With nothing to read, client-node falls back to http://localhost:8080 and then
  // refuses its own default ("HTTP protocol is not allowed ..."): say what is missing instead.
  if (!kubeconfig && !env && !process.env.KUBERNETES_SERVICE_HOST && !existsSync(defaultKubeconfig()))
    throw new Error(
      `no kubeconfig: --kubeconfig is not given, KUBECONFIG is not set and ${defaultKubeconfig()} does not exist. ` +
        `Point at your cluster's with --kubeconfig PATH or KUBECONFIG=PATH; ${TRY_LOCALLY}`,
    );
  try {
    if (kubeconfig) kc.loadFromFile(kubeconfig);
    else kc.loadFromDefault();
  } catch (err) {
    const from = kubeconfig ? `--kubeconfig ${kubeconfig}` : `KUBECONFIG=${env ?? defaultKubeconfig()}`;
    const e = err as NodeJS.ErrnoException;
    if (e.code === 'ENOENT')
      throw new Error(
        `the kubeconfig ${e.path ?? kubeconfig ?? env} does not exist (${from}); ` +
          `give the path of an existing one; ${TRY_LOCALLY}`,
      );
    throw new Error(`cannot read the kubeconfig (${from}): ${e.message}`);
  }
  if (context) {
    if (!kc.getContextObject(context)) throw new UsageError(`no context "${context}" in the kubeconfig`);
    kc.setCurrentContext(context);
  }
  // Few retries: a refused connection seldom heals within a command's lifetime, and
  // five retries were five silent seconds before the user heard anything.
  return KubeClient.fromKubeConfig(kc, { userAgent: 'nodewarden-cli', maxRetries: 3 });
}

const defaultKubeconfig = () => join(homedir(), '.kube', 'config');

const TRY_LOCALLY =
  'for a local cluster to try nodewarden on: nodewarden cluster up, then export KUBECONFIG=$(nodewarden cluster kubeconfig)';

// The request never got an answer: the server is down, or not where the kubeconfig says.
const UNREACHABLE: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ENOTFOUND: 'no such host',
  EAI_AGAIN: 'name lookup failed',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  ETIMEDOUT: 'timed out',
};

/** What to say when `err` means the API server at `server` could not be reached; undefined otherwise. */
export function explainUnreachable(err: unknown, server: URL | undefined): string | undefined {
  const why = UNREACHABLE[(err as NodeJS.ErrnoException | undefined)?.code ?? ''];
  if (!why || !server) return undefined;
  const head = `cannot reach the API server at ${server.origin} (${why})`;
  const local = localClusterAt(server);
  if (local)
    return `${head}: it is the local cluster "${local}", which is not running; start it with: nodewarden cluster up --name ${local}`;
  return `${head}: is the cluster running, and is the kubeconfig's server address right? (kubectl cluster-info checks both)`;
}

/**
 * Runs a subcommand's body and turns what it throws into words and an exit status:
 * 2 for a usage mistake, 1 for anything else. The client it opened is closed.
 */
export async function runCommand(
  command: string,
  io: CommandIO,
  body: (use: (client: KubeClient) => KubeClient) => Promise<number>,
): Promise<number> {
  const complain = (line: string) => io.err.write(`nodewarden ${command}: ${line}\n`);
  let client: KubeClient | undefined;
  try {
    return await body((c) => {
      client = c;
      return c;
    });
  } catch (err) {
    if (err instanceof UsageError) {
      complain(`${err.message}\nRun "nodewarden ${command} --help" for usage.`);
      return 2;
    }
    // A refusal from the API server (webhook, schema, RBAC, conflict) carries its own words.
    if (err instanceof ApiError) complain(`the API server refused: ${err.message}`);
    else if (explainUnreachable(err, client?.server)) complain(explainUnreachable(err, client?.server)!);
    else complain(err instanceof Error ? err.message : String(err));
    return 1;
  } finally {
    client?.close();
  }
}

/** How a new user installs the CRDs, in every message that finds them missing. */
export const INSTALL_CRDS =
  'install the CRDs with "make install" in a clone of nodewarden, or with its Helm chart (helm install nodewarden charts/nodewarden)';

export { isUnknownResource };

/** The error to report for a call on `type` that failed with `err`: its own, or that the CRDs are missing. */
export function explainMissingCrd(err: unknown, type: ResourceType): unknown {
  if (!isUnknownResource(err)) return err;
  return new Error(
    `the ${type.kind} CRD (${type.plural}.${type.group}) is not installed in this cluster; ${INSTALL_CRDS}`,
  );
}

/** `call`, with a missing CRD for `type` reported as such rather than as an HTTP 404. */
export async function needsCrd<R>(type: ResourceType, call: Promise<R>): Promise<R> {
  try {
    return await call;
  } catch (err) {
    throw explainMissingCrd(err, type);
  }
}

/** Milliseconds in a flag bounding how long a command waits: whole seconds ("600") or a duration ("10m", "1h30m"). */
export function waitFlag(text: string, flag: string): number {
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  try {
    return parseDuration(text);
  } catch {
    throw new UsageError(`${flag} "${text}" is not a number of seconds or a duration like 90s, 10m or 2h`);
  }
}
