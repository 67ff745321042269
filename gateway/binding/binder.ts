/**
 * Binds the function services' handlers to what serves them: a pipeline per watched resource, the
 * admission webhooks. Handlers whose resource is not there yet (a CRD applied later), and those by
 * category or `*`, are looked for again while the gateway runs; a service that is redeployed,
 * redirected, added or removed has its handlers replaced in one step. One change at a time.
 */

import { type AdmissionHost, isAdmissionHandler } from '../admission/host.ts';
import type { FunctionService } from '../dispatch/function-service.ts';
import {
  type DiscoveredResource,
  type DiscoveryCache,
  describe,
  ResourceNotFound,
  resourceKey,
  selectsSeveral,
} from '../kube/discovery.ts';
import type { Logger } from '../logging.ts';
import type { ResourcePipeline } from '../resource/pipeline.ts';
import { Serial } from '../serial.ts';
import type { Activities } from '../services/activities.ts';
import { backoffDelay, sleep } from '../timing.ts';
import { bindHandlers, type Group, outsideScope, serveGroups, type Unresolved } from './binding.ts';
import type { Pipelines } from './pipelines.ts';

export interface HandlerBinderOptions {
  discovery: DiscoveryCache;
  admission: AdmissionHost;
  /** Makes the pipeline of a resource the first time handlers of it are served, with them bound. */
  pipelines: Pick<Pipelines, 'make'>;
  /** Startup handlers of a service that joins once the gateway runs: false when they did not succeed. */
  startupOf: Activities['startupOf'];
  stopping: AbortSignal;
  logger: Logger;
}

/** Handlers left to serve later and, when serving a resource failed, the error. */
interface Resolved {
  left: Unresolved[];
  error?: unknown;
}

export class HandlerBinder {
  readonly #options: HandlerBinderOptions;
  readonly #pipelines = new Map<string, ResourcePipeline>();
  /** Handlers whose resource is not there yet, and those by category or `*`. */
  #pending: Unresolved[] = [];
  #lookingLater: Promise<void> | undefined;
  /** Changes to what is served happen one at a time. */
  readonly #changes = new Serial();
  #started = false;

  constructor(options: HandlerBinderOptions) {
    this.#options = options;
  }

  /**
   * Serves the handlers of the services the gateway starts with; a failure fails the start. A change
   * of the services told meanwhile (rebind) is made after it.
   */
  serve(services: readonly FunctionService[]): Promise<void> {
    return this.#changes.run(async () => {
      const { left, error } = await this.#resolve(handlersOf(services), true);
      if (error !== undefined) throw error;
      this.#pending.push(...left);
    });
  }

  /** The gateway runs: what is pending is looked for from now on. */
  start(): void {
    this.#started = true;
    this.#resolveLater([]);
  }

  async stop(): Promise<void> {
    await this.#lookingLater;
    await this.#changes.idle();
  }

  /**
   * Another service answers for a name now (redeployed with other handlers, redirected by a dev
   * session, or given anew): its handlers replace the previous one's. Cycles under way finish with
   * the previous one. A service added has no previous one; a service removed, no next.
   */
  rebind(previous: FunctionService | undefined, given: FunctionService | undefined): Promise<void> {
    return this.#changes.run(() => this.#rebind(previous, given));
  }

  async #rebind(previous: FunctionService | undefined, given: FunctionService | undefined): Promise<void> {
    const { admission, logger } = this.#options;
    // A service that joins the running gateway starts as those at the start did: its handlers are
    // served once its startup handlers have succeeded, and not at all if they fail.
    const joined = given && !previous && this.#started;
    const next =
      joined && !(await this.#options.startupOf(given, this.#options.stopping)) ? undefined : given;
    if (given && !next) {
      logger.error(`function service "${given.name}" is not served: its startup handlers did not succeed`);
    }
    const { groups, left } = await this.#locate(handlersOf(next ? [next] : []), true);
    // In one step, with no await: a cycle sees the handlers of one service or the other, never neither
    // (with neither, it would take an object for unhandled, or release its finalizer).
    const rebound = new Set<string>();
    for (const [key, { served }] of this.#pipelines) {
      const before = served.bindings.length;
      served.bindings = served.bindings.filter((binding) => binding.service !== previous);
      const group = groups.get(key);
      if (served.bindings.length !== before || group) rebound.add(key);
      if (!group) continue;
      bindHandlers(
        served,
        group.items.filter(({ handler }) => !isAdmissionHandler(handler)),
      );
      group.items = group.items.filter(({ handler }) => isAdmissionHandler(handler));
      admission.holdAtCreation(served);
    }
    if (previous) admission.retire(previous); // its webhooks answer until the next ones are configured
    this.#pending = this.#pending.filter((item) => item.service !== previous);
    const { unserved, error } = await serveGroups(groups, (group) => this.#serveGroup(group));
    await admission.sync();
    // What could not be served now is looked for again, as handlers whose resource appears later are.
    this.#resolveLater([...new Set([...left, ...unserved])]);
    // Its objects are looked at again with the handlers they have now: one a removed service left
    // unhandled is handled by the one that comes (a cycle that finds nothing new writes nothing).
    for (const [key, pipeline] of this.#pipelines) await pipeline.reselect(rebound.has(key));
    if (error !== undefined) throw error;
  }

  /**
   * Adds handlers to the resource they name. The first time, makes its pipeline; later, watches again
   * when the new handlers change which labels every handler requires.
   */
  async #serveGroup({
    resource,
    items,
  }: {
    resource: DiscoveredResource;
    items: Unresolved[];
  }): Promise<void> {
    const { admission } = this.#options;
    const watched = await admission.serve(resource, items);
    if (watched.length === 0) return; // reviewed only: nothing to watch
    const key = resourceKey(resource);
    const existing = this.#pipelines.get(key);
    if (existing) {
      bindHandlers(existing.served, watched);
      admission.holdAtCreation(existing.served);
      await existing.reselect();
      return;
    }
    const pipeline = await this.#options.pipelines.make(resource, watched);
    this.#pipelines.set(key, pipeline);
    admission.holdAtCreation(pipeline.served);
  }

  /**
   * Serves every handler whose resource discovery knows now, and those by category on the resources
   * of it not served yet. Returns the others, those by category (which more resources may join) and,
   * when serving a resource failed, those it did not serve, with the error.
   */
  async #resolve(pending: Unresolved[], announce: boolean): Promise<Resolved> {
    const { groups, left } = await this.#locate(pending, announce);
    const { unserved, error } = await serveGroups(groups, (group) => this.#serveGroup(group));
    if (groups.size > 0) await this.#options.admission.sync();
    return { left: [...new Set([...left, ...unserved])], ...(error === undefined ? {} : { error }) };
  }

  /**
   * Groups handlers by the resource discovery finds for them now; `left` are those it does not know,
   * and those by category or `*`, which are never found for good: each resource of theirs is grouped
   * once, the first time it is seen, so that those that join later are served in turn.
   */
  async #locate(pending: Unresolved[], announce: boolean) {
    const { discovery, logger } = this.#options;
    const current = await discovery.fresh();
    const left: Unresolved[] = [];
    const byResource = new Map<string, Group>();
    const add = (resource: DiscoveredResource, item: Unresolved) => {
      const key = resourceKey(resource);
      const group = byResource.get(key) ?? { resource, items: [] };
      group.items.push(item);
      byResource.set(key, group);
    };
    for (const item of pending) {
      const { handler, service } = item;
      if (selectsSeveral(handler.resource)) {
        left.push(item);
        item.servedOn ??= new Set();
        const servedOn = item.servedOn;
        const joined = current
          .select(handler.resource)
          .filter((resource) => !servedOn.has(resourceKey(resource)));
        for (const resource of joined) servedOn.add(resourceKey(resource));
        // Of a category, only the members in the service's scope: the others are no concern of it.
        const inScope = joined.filter((resource) => !outsideScope(service, handler, resource));
        for (const resource of inScope) add(resource, item);
        if (inScope.length > 0) {
          logger.info(
            `handler "${handler.id}" of "${service.name}" (${describe(handler.resource)}) is served on ` +
              inScope.map(resourceKey).join(', '),
          );
        } else if (announce && servedOn.size === 0) {
          logger.info(
            `handler "${handler.id}" of "${service.name}": no resource ${describe(handler.resource)} yet; ` +
              'each will be served as it appears',
          );
        }
        continue;
      }
      try {
        const resource = current.resolve(handler.resource);
        const refused = outsideScope(service, handler, resource);
        if (refused) logger.error(`${refused}: it is not served`);
        else add(resource, item);
      } catch (error) {
        if (!(error instanceof ResourceNotFound)) throw error;
        left.push(item);
        if (announce) {
          logger.warning(
            `handler "${item.handler.id}" of "${item.service.name}": ${error.message}; ` +
              'it will be served once the resource appears',
          );
        }
      }
    }
    return { groups: byResource, left };
  }

  /**
   * Looks for the resources of what is pending again, less and less often (every 30 s at last), until
   * each is served; for handlers by category or `*`, for as long as the gateway runs.
   */
  #resolveLater(items: Unresolved[]): void {
    this.#pending.push(...items);
    if (!this.#started || this.#lookingLater || this.#pending.length === 0) return;
    const { stopping, logger } = this.#options;
    this.#lookingLater = (async () => {
      for (let looks = 0; this.#pending.length > 0; looks++) {
        await sleep(backoffDelay({ first: 1000, max: 30_000 }, looks), stopping);
        if (stopping.aborted) return;
        try {
          await this.#changes.run(async () => {
            const batch = this.#pending;
            this.#pending = [];
            let resolved: Resolved;
            try {
              resolved = await this.#resolve(batch, false);
            } catch (error) {
              this.#pending.push(...batch); // discovery failed: nothing was served
              throw error;
            }
            this.#pending.push(...resolved.left);
            if (resolved.error !== undefined) throw resolved.error;
          });
        } catch (error) {
          logger.warning('serving handlers found later failed, retrying', { err: error });
        }
      }
    })().finally(() => {
      this.#lookingLater = undefined;
    });
  }
}

function handlersOf(services: readonly FunctionService[]): Unresolved[] {
  return services.flatMap((service) => service.manifest.handlers.map((handler) => ({ service, handler })));
}
