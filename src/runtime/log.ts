// Structured JSON logging with pino, with field names close to controller-runtime's
// so log queries written for Go operators carry over.
import { pino } from 'pino';

export type Logger = pino.Logger;

export interface LoggerOptions {
  level?: string;
  /** Where JSON lines go; stdout when omitted. */
  destination?: pino.DestinationStream;
}

export function createLogger(opts: LoggerOptions = {}): Logger {
  const options: pino.LoggerOptions = {
    level: opts.level ?? 'info',
    // Hostname and pid add noise in a pod; the pod name is in the log stream metadata.
    base: undefined,
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
  };
  return opts.destination ? pino(options, opts.destination) : pino(options);
}

export const rootLogger: Logger = createLogger({ level: process.env.NODEWARDEN_LOG_LEVEL || 'info' });

/**
 * Changes the level of rootLogger and of every logger derived from it: pino
 * children inherit the level through their prototype unless given their own.
 */
export function setLogLevel(level: string): void {
  rootLogger.level = level;
}

export function loggerFor(controller: string): Logger {
  return rootLogger.child({ controller });
}

interface ObjectWithMeta {
  metadata?: { name?: string; namespace?: string };
}

/** `{namespace, name}` for namespaced objects, `{name}` for cluster-scoped ones. */
export function objectKeys(obj: ObjectWithMeta): { namespace?: string; name: string } {
  const name = obj.metadata?.name ?? '';
  const namespace = obj.metadata?.namespace;
  return namespace ? { namespace, name } : { name };
}
