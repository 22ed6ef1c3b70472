// How a command prints what it found, in kubectl's -o formats: a table (wide:
// with more columns), names one a line, or the documents as JSON or YAML. Each
// command describes its objects once (an ObjectView) and writeObjects does the
// rest, so every command reads -o the same way.
import { stringify } from 'yaml';
import type { ResourceType } from '../runtime/resources.ts';
import { type CommandIO, UsageError } from './command.ts';

/** kubectl's -o values, table first (the default). */
export const OUTPUT_FORMATS = ['table', 'wide', 'name', 'json', 'yaml'] as const;
export type OutputFormat = (typeof OUTPUT_FORMATS)[number];

/** The -o values of a verb that prints one document (settings, faults), not objects. */
export const DOCUMENT_FORMATS = ['table', 'json', 'yaml'] as const;

/** How a command shows a list of its objects, whatever -o asks. */
export interface ObjectView<T> {
  /** The table (or the detail, on a status verb); `wide` adds kubectl -o wide's extra columns. */
  table(items: readonly T[], wide: boolean): string;
  /** -o name: kubeName() for a Kubernetes object, the plain name for anything else. */
  name(item: T): string;
  /** -o json|yaml: the document for these items (default: a v1 List of them, without managedFields). */
  document?(items: readonly T[]): unknown;
  /** Said on stderr instead of an empty table. */
  none?: string;
}

/**
 * Writes `items` in `format`. `stream`: one of many writes as things change (a
 * watch): JSON on one line each, YAML each after a "---".
 */
export function writeObjects<T>(
  io: CommandIO,
  format: OutputFormat,
  items: readonly T[],
  view: ObjectView<T>,
  stream = false,
): void {
  if (format === 'json' || format === 'yaml')
    writeDocument(io, format, view.document ? view.document(items) : kubeList(items), stream);
  else if (format === 'name') io.out.write(items.map((i) => `${view.name(i)}\n`).join(''));
  else if (!items.length && view.none !== undefined) io.err.write(`${view.none}\n`);
  else io.out.write(view.table(items, format === 'wide'));
}

/** An object's name as kubectl -o name prints it: "nodemaintenance.maintenance.nodewarden.dev/n1", "node/n1". */
export function kubeName(type: ResourceType, obj: { metadata: { name?: string } }): string {
  return `${type.kind.toLowerCase()}${type.group ? `.${type.group}` : ''}/${obj.metadata.name ?? ''}`;
}

/** Objects as one document, the way kubectl get -o json prints several. */
export function kubeList(items: readonly unknown[]): unknown {
  return {
    apiVersion: 'v1',
    kind: 'List',
    items: items.map((i) =>
      typeof i === 'object' && i !== null && 'metadata' in i
        ? withoutManagedFields(i as { metadata: { managedFields?: unknown } })
        : i,
    ),
  };
}

/**
 * Writes one document as JSON or YAML. `stream`: one of many written as they
 * come (a watch): JSON on one line each, YAML each after a "---". A document
 * has no table columns and no name: -o wide or name is refused as a usage
 * mistake where a command prints through here alone.
 */
export function writeDocument(
  io: CommandIO,
  format: Exclude<OutputFormat, 'table'>,
  doc: unknown,
  stream = false,
): void {
  if (format === 'wide' || format === 'name')
    throw new UsageError(`-o ${format} is not available here; use ${DOCUMENT_FORMATS.join(', ')}`);
  if (format === 'json') io.out.write(`${stream ? JSON.stringify(doc) : JSON.stringify(doc, null, 2)}\n`);
  else io.out.write(`${stream ? '---\n' : ''}${stringify(doc)}`);
}

/** The object without managedFields: noise for anyone reading the output. */
export function withoutManagedFields<O extends { metadata: { managedFields?: unknown } }>(o: O): O {
  const { managedFields: _, ...metadata } = o.metadata;
  return { ...o, metadata };
}
