/**
 * Handlers on their way to being served: grouped by the resource discovery found for them, served a
 * group at a time, and bound to what serves each resource. Pure, so that gateway.ts only decides
 * when; serving itself (watches, webhooks) is the caller's.
 */
import type { HandlerSpec } from '../protocol/index.ts';
import type { FunctionService } from './dispatch/function-service.ts';
import type { DiscoveredResource } from './kube/discovery.ts';
import type { ServedResource } from './reactor/model.ts';

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

/** How the gateway tells resources apart, as it keys what serves each. */
export function resourceKey(resource: DiscoveredResource): string {
  return `${resource.plural}.${resource.group}/${resource.version}`;
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
