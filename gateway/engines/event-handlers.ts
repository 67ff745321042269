/**
 * `on.event` handlers: every watch event, as it comes (not merged like causes), in order per object.
 * No state is kept and nothing is retried: failures are logged, as Kopf does.
 */
import { createHash } from 'node:crypto';
import type { KubernetesObject } from '../../protocol/index.ts';
import type { FunctionService } from '../dispatch/function-service.ts';
import { invocationRequest } from '../dispatch/invocation.ts';
import type { Identity } from '../identity.ts';
import type { KubeClient } from '../kube/client.ts';
import { postEvents } from '../kube/events.ts';
import { addObjectPatch, applyChanges, emptyChanges } from '../kube/patcher.ts';
import type { WatchEventType } from '../kube/watcher.ts';
import type { Logger } from '../logging.ts';
import { objectMatches } from '../reactor/filters.ts';
import type { ServedResource } from '../reactor/processor.ts';
import { describe } from '../reactor/queue.ts';

export class RawEvents {
  readonly #served: ServedResource;
  readonly #client: KubeClient;
  readonly #identity: Identity;
  readonly #logger: Logger;
  /** The last call chained for each object: the next waits for it. */
  readonly #chains = new Map<string, Promise<void>>();

  constructor(served: ServedResource, client: KubeClient, identity: Identity, logger: Logger) {
    this.#served = served;
    this.#client = client;
    this.#identity = identity;
    this.#logger = logger;
  }

  push(type: WatchEventType, object: KubernetesObject): void {
    const calls = this.#served.bindings
      .map(({ service, handlers }) => ({
        service,
        handlers: handlers.filter((spec) => spec.kind === 'event' && objectMatches(object, spec.filters)),
      }))
      .filter(({ handlers }) => handlers.length > 0);
    if (calls.length === 0) return;
    const uid = object.metadata.uid;
    const previous = this.#chains.get(uid) ?? Promise.resolve();
    const next = previous.then(() => this.#deliver(type, object, calls));
    this.#chains.set(uid, next);
    void next.finally(() => {
      if (this.#chains.get(uid) === next) this.#chains.delete(uid);
    });
  }

  /** Waits for the calls in flight. */
  async stop(): Promise<void> {
    await Promise.all(this.#chains.values());
  }

  async #deliver(
    type: WatchEventType,
    object: KubernetesObject,
    calls: Array<{ service: FunctionService; handlers: ServedResource['bindings'][number]['handlers'] }>,
  ): Promise<void> {
    const log = this.#logger.child(describe(object));
    const now = new Date().toISOString();
    const changes = emptyChanges();
    const events = [];
    for (const { service, handlers } of calls) {
      const due = handlers.map((spec) => ({
        id: spec.id,
        retry: 0,
        started: now,
        idempotencyKey: createHash('sha256')
          .update(`${object.metadata.uid}\0${spec.id}\0${type}\0${object.metadata.resourceVersion}`)
          .digest('base64url')
          .slice(0, 32),
      }));
      try {
        const request = invocationRequest('event', this.#served.resource, object, due, service.timeoutMs);
        const response = await service.invoke({ ...request, event: type });
        for (const line of response.logs)
          log.log(line.level, line.handler ? `${line.handler}: ${line.message}` : line.message);
        for (const [id, outcome] of Object.entries(response.outcomes)) {
          if (outcome.patch) addObjectPatch(changes, outcome.patch);
          if (outcome.events) events.push(...outcome.events);
          if (outcome.status === 'temporary' || outcome.status === 'permanent') {
            log.error(`event handler ${id} failed (not retried): ${outcome.message}`);
          }
        }
      } catch (error) {
        log.error(
          `event handlers of "${service.name}" could not be called: ${error instanceof Error ? error.message : error}`,
        );
      }
    }
    if (type === 'DELETED') return; // nothing left to patch or to post about
    try {
      const written = await applyChanges(
        this.#client,
        this.#served.resource,
        object,
        changes,
        this.#identity.fieldManager,
      );
      if (events.length > 0) await postEvents(this.#client, written ?? object, events, log);
    } catch (error) {
      log.error(
        `applying what event handlers returned failed: ${error instanceof Error ? error.message : error}`,
      );
    }
  }
}
