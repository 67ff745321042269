/**
 * Decides, in the gateway, which handlers an object concerns: labels, annotations, a field's value,
 * and for updates the field's old and new values. An object that matches no handler costs no call,
 * no write and no log line.
 */
import type { HandlerFilters, KubernetesObject, MetaMatch, ValueMatch } from '../../protocol/index.ts';
import { equal, valueAt } from '../../protocol/json.ts';
import { type NamespaceSelection, selectNamespaces } from '../watching/namespaces.ts';

function metaMatches(
  values: Record<string, string> | undefined,
  wanted: Record<string, MetaMatch> | undefined,
): boolean {
  for (const [key, match] of Object.entries(wanted ?? {})) {
    const value = values?.[key];
    if (typeof match === 'string') {
      if (value !== match) return false;
    } else if ('present' in match) {
      if (value === undefined) return false;
    } else if (value !== undefined) {
      return false;
    }
  }
  return true;
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
  if (!filters) return true;
  const { field, value } = filters;
  return (
    inNamespaces(object.metadata.namespace, filters.namespaces) &&
    metaMatches(object.metadata.labels, filters.labels) &&
    metaMatches(object.metadata.annotations, filters.annotations) &&
    (field === undefined ||
      valueMatches(valueAt(object, field), value) ||
      (before !== undefined && valueMatches(valueAt(before, field), value)))
  );
}

/** For updates: what the handler asks of the field's value before and after the change. */
export function changeMatches(old: unknown, current: unknown, filters: HandlerFilters | undefined): boolean {
  return valueMatches(old, filters?.old) && valueMatches(current, filters?.new);
}
