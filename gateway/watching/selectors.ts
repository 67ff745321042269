/**
 * Label filters that every handler of a resource shares become a label selector on its watch, so
 * the apiserver never sends objects that no handler could want. Not with delete handlers: an object
 * that stops matching would vanish from the watch with the gateway's finalizer still on it.
 */
import type { HandlerSpec, MetaMatch } from '../../protocol/index.ts';

function requirement(key: string, match: MetaMatch): string {
  if (typeof match === 'string') return `${key}=${match}`;
  return 'present' in match ? key : `!${key}`;
}

export function sharedLabelSelector(handlers: readonly HandlerSpec[]): string | undefined {
  if (handlers.length === 0 || handlers.some((handler) => handler.kind === 'delete')) return undefined;
  const [first, ...rest] = handlers.map(
    (handler) =>
      new Set(Object.entries(handler.filters?.labels ?? {}).map(([key, match]) => requirement(key, match))),
  );
  const shared = [...(first ?? [])].filter((term) => rest.every((terms) => terms.has(term)));
  return shared.length > 0 ? shared.sort().join(',') : undefined;
}
