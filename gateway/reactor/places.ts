/**
 * Where each service's state lands on an object, so that no service's results, progress or memo is
 * another's. A handler's result lands at `status.<id>` (Kopf's place) when its id is its service's
 * alone on the resource; when several services bind one id, each one's lands in the gateway's record,
 * at `status.<statusKey>.results.<service>.<id>`, which no service may patch. Progress is kept by
 * service (state/storage.ts progressKey). Pure: tested without a cluster.
 */
import { bareRecord, isObject } from '../../protocol/json.ts';
import { type Candidate, type Named, nameOf } from './model.ts';

/** The keys under `status` down to a result. */
export type ResultPath = readonly string[];

/** Where the result of `service`'s handler `id` lands, given every handler bound on the resource. */
export function resultPath<S extends Named>(
  handlers: readonly Candidate<S>[],
  service: Named,
  id: string,
  statusKey: string,
): ResultPath {
  const name = nameOf(service);
  const shared = handlers.some(({ service: other, spec }) => spec.id === id && nameOf(other) !== name);
  return shared ? [statusKey, 'results', name, id] : [id];
}

/**
 * The keys of `status` that other services' results are kept at (the ids they bind on the resource),
 * which `service`'s patches may not set: one service's patch never overwrites another's result.
 */
export function othersResultKeys<S extends Named>(
  handlers: readonly Candidate<S>[],
  service: Named,
): ReadonlySet<string> {
  const name = nameOf(service);
  return new Set(handlers.filter((handler) => nameOf(handler.service) !== name).map(({ spec }) => spec.id));
}

/** Sets a result in a status merge patch at its path, replacing what a patch put at the same place. */
export function placeResult(status: Record<string, unknown>, path: ResultPath, value: unknown): void {
  let into = status;
  for (const key of path.slice(0, -1)) {
    const next = Object.hasOwn(into, key) ? into[key] : undefined;
    if (isObject(next)) into = next;
    else {
      const made = bareRecord();
      into[key] = made;
      into = made;
    }
  }
  into[path[path.length - 1] as string] = value;
}

/** The value at a path under an object's status, if any. */
export function resultAt(status: Record<string, unknown> | undefined, path: ResultPath): unknown {
  let value: unknown = status;
  for (const key of path) {
    if (!isObject(value) || !Object.hasOwn(value, key)) return undefined;
    value = value[key];
  }
  return value;
}

/** How logs and docs name a result's place: `status.<key>.<key>`. */
export function describePath(path: ResultPath): string {
  return `status.${path.join('.')}`;
}
