/**
 * `on.event` handlers: every watch event, as it comes (not merged like causes), in order per object.
 * No state is kept and nothing is retried: failures are logged, as Kopf does. The calls go through the
 * gateway's one call path; their patches and events are written as a cycle's are.
 */
import type { DueHandler, KubernetesObject } from '../../protocol/index.ts';
import { callServices, idempotencyKey, type RetryDelays } from '../dispatch/calls.ts';
import type { FunctionService } from '../dispatch/function-service.ts';
import type { WatchEventType } from '../kube/watcher.ts';
import type { Logger } from '../logging.ts';
import { applyObjects, type ReactorApi } from '../reactor/api.ts';
import { objectMatches } from '../reactor/filters.ts';
import { type Binding, candidatesOf, objectName, type ServedResource } from '../reactor/model.ts';
import { collectEffects, emptyEffects } from '../reactor/outcomes.ts';
import { othersResultKeys } from '../reactor/places.ts';
import { Serial } from '../serial.ts';

export class EventHandlers {
  readonly #served: ServedResource;
  readonly #api: ReactorApi;
  readonly #logger: Logger;
  /** Each object's calls, one at a time; forgotten when none is left. */
  readonly #calls = new Map<string, Serial>();

  constructor(served: ServedResource, api: ReactorApi, logger: Logger) {
    this.#served = served;
    this.#api = api;
    this.#logger = logger;
  }

  /** Event handlers are never retried, so a failed service is not called again for the same event. */
  static readonly #NO_RETRIES: RetryDelays = [0];

  push(type: WatchEventType, object: KubernetesObject): void {
    const bindings = this.#served.bindings
      .map(({ service, handlers }) => ({
        service,
        handlers: handlers.filter((spec) => spec.kind === 'event' && objectMatches(object, spec.filters)),
      }))
      .filter(({ handlers }) => handlers.length > 0);
    if (bindings.length === 0) return;
    const uid = object.metadata.uid;
    const calls = this.#calls.get(uid) ?? new Serial();
    this.#calls.set(uid, calls);
    void calls
      .run(() => this.#deliver(type, object, bindings))
      .finally(() => {
        if (!calls.busy) this.#calls.delete(uid);
      });
  }

  /** Waits for the calls in flight. */
  async stop(): Promise<void> {
    await Promise.all([...this.#calls.values()].map((calls) => calls.idle()));
  }

  async #deliver(type: WatchEventType, object: KubernetesObject, bindings: Binding<FunctionService>[]) {
    const log = this.#logger.child({ object: objectName(object) });
    const started = new Date().toISOString();
    const { uid, resourceVersion } = object.metadata;
    const calls = bindings.map(({ service, handlers }) => ({
      service,
      handlers: handlers.map(
        (spec): DueHandler => ({
          id: spec.id,
          retry: 0,
          started,
          idempotencyKey: idempotencyKey(uid, spec.id, type, resourceVersion ?? '', service.name),
        }),
      ),
    }));
    const answers = await callServices(
      calls,
      {
        reason: 'event',
        resource: this.#served.resource,
        object,
        event: type,
        othersResults: (service) => othersResultKeys(candidatesOf(this.#served), service),
      },
      EventHandlers.#NO_RETRIES,
      log,
    );
    const effects = emptyEffects();
    for (const answer of answers) {
      for (const [id, outcome] of Object.entries(answer.outcomes)) {
        // Each event's children are its own: one with a generateName is made once per event.
        collectEffects(effects, outcome, idempotencyKey(uid, id, type, resourceVersion ?? ''));
        if (outcome.status === 'temporary' || outcome.status === 'permanent') {
          log.error('event handler failed (not retried)', { handler: id, err: outcome.message });
        }
      }
    }
    try {
      const applied = await applyObjects(this.#api, effects.apply, object.metadata.namespace);
      // A deleted object is gone: nothing to patch, and only events about other objects to post.
      const events = type === 'DELETED' ? effects.events.filter((event) => event.about) : effects.events;
      const written = type === 'DELETED' ? undefined : await this.#api.applyChanges(object, effects.changes);
      if (events.length > 0) await this.#api.postEvents(written ?? object, events, log, applied);
    } catch (error) {
      log.error('applying what event handlers returned failed', { err: error });
    }
  }
}
