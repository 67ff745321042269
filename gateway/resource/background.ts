/**
 * What timers and daemons share: the handlers of their kind that match an object now, and writing
 * what their calls return only where it changes the object as the watch last showed it.
 */
import type { HandlerKind, HandlerSpec, KubernetesObject } from '../../protocol/index.ts';
import { equal, mergePatched } from '../../protocol/json.ts';
import type { FunctionService } from '../dispatch/function-service.ts';
import { isNotFound } from '../kube/errors.ts';
import type { Logger } from '../logging.ts';
import { applyObjects, type ReactorApi } from '../reactor/api.ts';
import { objectMatches } from '../reactor/filters.ts';
import type { ServedResource } from '../reactor/model.ts';
import type { CycleEffects } from '../reactor/outcomes.ts';

export interface BoundHandler {
  service: FunctionService;
  spec: HandlerSpec;
}

/** The handlers of `kind` bound now that match the object; none for one being deleted. */
export function matchingHandlers(
  served: ServedResource,
  kind: HandlerKind,
  object: KubernetesObject,
): BoundHandler[] {
  if (object.metadata.deletionTimestamp) return [];
  return served.bindings.flatMap(({ service, handlers }) =>
    handlers
      .filter((spec) => spec.kind === kind && objectMatches(object, spec.filters))
      .map((spec) => ({ service, spec })),
  );
}

/** Whether the handler is still bound to the resource (a service redeployed may have dropped it). */
export function stillBound(served: ServedResource, { service, spec }: BoundHandler): boolean {
  return served.bindings.some((binding) => binding.service === service && binding.handlers.includes(spec));
}

/** One key per handler of a service: what a timer or daemon of an object is known by. */
export function handlerKey({ service, spec }: BoundHandler): string {
  return `${service.name}\0${spec.id}`;
}

/**
 * Writes the effects, leaving out a patch that changes nothing in `current`; failures are logged (an
 * object deleted meanwhile is not one).
 */
export async function writeEffects(
  api: ReactorApi,
  current: KubernetesObject,
  effects: CycleEffects,
  log: Logger,
): Promise<void> {
  const { changes } = effects;
  const changing = !equal(mergePatched(current, { ...changes.object, status: changes.status }), current);
  if (!changing && effects.apply.length === 0 && effects.events.length === 0) return;
  try {
    const applied = await applyObjects(api, effects.apply, current.metadata.namespace);
    const written = changing ? await api.applyChanges(current, changes) : undefined;
    if (effects.events.length > 0) await api.postEvents(written ?? current, effects.events, log, applied);
  } catch (error) {
    if (isNotFound(error)) return;
    log.error('writing what handlers returned failed', { err: error });
  }
}
