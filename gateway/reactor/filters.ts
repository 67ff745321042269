/**
 * Decides, in the gateway, which handlers an object concerns: labels, annotations, a field's value,
 * and for updates the field's old and new values. An object that matches no handler costs no call,
 * no write and no log line.
 */
import type { HandlerFilters, KubernetesObject, MetaMatch, ValueMatch } from '../../protocol/index.ts';
import { equal, valueAt } from '../../protocol/json.ts';
import { type NamespaceSelection, selectNamespaces } from '../watching/namespaces.ts';

/** The first key whose label or annotation is not as `wanted` says; undefined when all are. */
function unmetKey(
  values: Record<string, string> | undefined,
  wanted: Record<string, MetaMatch> | undefined,
): string | undefined {
  for (const [key, match] of Object.entries(wanted ?? {})) {
    const value = values?.[key];
    if (typeof match === 'string') {
      if (value !== match) return key;
    } else if ('present' in match) {
      if (value === undefined) return key;
    } else if (value !== undefined) {
      return key;
    }
  }
  return undefined;
}

function valueMatches(value: unknown, match: ValueMatch | undefined): boolean {
  if (match === undefined) return true;
  if ('equals' in match) return equal(value, match.equals);
  if ('present' in match) return value !== undefined;
  return value === undefined;
}

const selections = new WeakMap<readonly string[], NamespaceSelection>();

/** A cluster-scoped object is in no namespace to narrow by. */
function inNamespaces(namespace: string | undefined, patterns: readonly string[] | undefined): boolean {
  if (!patterns || namespace === undefined) return true;
  let selection = selections.get(patterns);
  if (!selection) {
    selection = selectNamespaces(patterns);
    selections.set(patterns, selection);
  }
  return selection.matches(namespace);
}

/** The filter an object fails first, in the order the gateway checks them: what `causeway explain` shows. */
export type FilterMiss =
  | { filter: 'namespaces' }
  | { filter: 'labels' | 'annotations'; key: string }
  | { filter: 'field'; field: string };

/**
 * Everything but old/new: what a handler asks of the object as it is now. For an update, given the
 * object's essence `before` it, a field's `value` matches the old value or the new one, as in Kopf:
 * a handler for `phase: ready` hears that the phase is no longer ready.
 */
export function objectMatches(
  object: KubernetesObject,
  filters: HandlerFilters | undefined,
  before?: unknown,
): boolean {
  return filterMiss(object, filters, before) === undefined;
}

/** Which of the handler's filters the object fails (see objectMatches); undefined when it fails none. */
export function filterMiss(
  object: KubernetesObject,
  filters: HandlerFilters | undefined,
  before?: unknown,
): FilterMiss | undefined {
  if (!filters) return undefined;
  if (!inNamespaces(object.metadata.namespace, filters.namespaces)) return { filter: 'namespaces' };
  const label = unmetKey(object.metadata.labels, filters.labels);
  if (label !== undefined) return { filter: 'labels', key: label };
  const annotation = unmetKey(object.metadata.annotations, filters.annotations);
  if (annotation !== undefined) return { filter: 'annotations', key: annotation };
  const { field, value } = filters;
  if (
    field === undefined ||
    valueMatches(valueAt(object, field), value) ||
    (before !== undefined && valueMatches(valueAt(before, field), value))
  )
    return undefined;
  return { filter: 'field', field };
}

/** For updates: what the handler asks of the field's value before and after the change. */
export function changeMatches(old: unknown, current: unknown, filters: HandlerFilters | undefined): boolean {
  return valueMatches(old, filters?.old) && valueMatches(current, filters?.new);
}
