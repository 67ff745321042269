/**
 * Handlers on their way to being served: grouped by the resource discovery found for them, served a
 * group at a time, and bound to what serves each resource. Pure, so that gateway.ts only decides
 * when; serving itself (watches, webhooks) is the caller's.
 */
import { type HandlerSpec, isAdmissionKind } from '../../protocol/index.ts';
import type { FunctionService } from '../dispatch/function-service.ts';
import { covers, scopeName } from '../dispatch/scope.ts';
import {
  type DiscoveredResource,
  type Discovery,
  ResourceNotFound,
  selectsSeveral,
} from '../kube/discovery.ts';
import type { ServedResource } from '../reactor/model.ts';

/** A handler of a service, not served yet (or, by category or `*`, not on every resource of it). */
export interface Unresolved {
  service: FunctionService;
  handler: HandlerSpec;
  /** A handler by category or `*`: the resources (by `resourceKey`) it is served on already. */
  servedOn?: Set<string>;
}

/** The handlers found for one resource. */
export interface Group {
  resource: DiscoveredResource;
  items: Unresolved[];
}

/** The resources a handler names, as discovery knows them now: one, or those of its category or `*`; none when not there yet. */
export function resourcesNamed(handler: HandlerSpec, discovery: Discovery): DiscoveredResource[] {
  try {
    return selectsSeveral(handler.resource)
      ? discovery.select(handler.resource)
      : [discovery.resolve(handler.resource)];
  } catch (error) {
    if (error instanceof ResourceNotFound) return [];
    throw error;
  }
}

/**
 * Serves the groups one after the other. When one fails, the rest are not tried: their handlers by
 * category are unmarked on them (to be grouped there again), and the handlers of the groups not
 * served are returned, each once, with the error, for the caller to look for again. The groups
 * served before stay served: giving their handlers back would bind them twice.
 */
export async function serveGroups(
  groups: ReadonlyMap<string, Group>,
  serve: (group: Group) => Promise<void>,
): Promise<{ unserved: Unresolved[]; error?: unknown }> {
  const entries = [...groups];
  for (const [index, [, group]] of entries.entries()) {
    try {
      await serve(group);
    } catch (error) {
      const rest = entries.slice(index);
      for (const [key, { items }] of rest) for (const item of items) item.servedOn?.delete(key);
      return { unserved: [...new Set(rest.flatMap(([, { items }]) => items))], error };
    }
  }
  return { unserved: [] };
}

/**
 * Binds handlers to what serves a resource, under their service's binding. A handler bound already
 * (a serving tried again after it failed half-way) is not bound twice: a service's ids are unique.
 */
export function bindHandlers(entry: ServedResource, items: readonly Unresolved[]): void {
  for (const { service, handler } of items) {
    const binding = entry.bindings.find((candidate) => candidate.service === service);
    if (!binding) entry.bindings.push({ service, handlers: [handler] });
    else if (!binding.handlers.some((bound) => bound.id === handler.id)) binding.handlers.push(handler);
  }
}

/**
 * Why a handler may not be served on a resource, by its service's scope: admission handlers review the
 * resources of `admission`, the others those of `resources`. Undefined when it may (or is unscoped).
 */
export function outsideScope(
  service: Pick<FunctionService, 'name' | 'scope'>,
  handler: HandlerSpec,
  resource: DiscoveredResource,
): string | undefined {
  const { scope } = service;
  if (!scope) return undefined;
  const field = isAdmissionKind(handler.kind) ? 'admission' : 'resources';
  if (covers(scope[field], resource)) return undefined;
  return (
    `handler "${handler.id}" of "${service.name}" names ${scopeName(resource)}, outside the scope pinned ` +
    `for it (${field}: ${(scope[field] ?? []).join(', ') || 'none'})`
  );
}

/**
 * The first of a service's handlers that names a resource outside its scope, as discovery knows the
 * resources now: a service so refused is not served at all. Handlers whose resource is not there yet
 * are looked at once it is; those by category or `*` are served on the members in scope only.
 */
export function firstOutsideScope(
  service: Pick<FunctionService, 'name' | 'scope' | 'manifest'>,
  discovery: Pick<Discovery, 'resolve'>,
): string | undefined {
  if (!service.scope) return undefined;
  for (const handler of service.manifest.handlers) {
    if (selectsSeveral(handler.resource)) continue;
    let resource: DiscoveredResource;
    try {
      resource = discovery.resolve(handler.resource);
    } catch (error) {
      if (error instanceof ResourceNotFound) continue;
      throw error;
    }
    const refused = outsideScope(service, handler, resource);
    if (refused) return refused;
  }
  return undefined;
}
