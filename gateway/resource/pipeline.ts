/**
 * What serves one resource: its watch feeds the reactor's queue, the event handlers, the timers, the
 * daemons and the indexes (resource/fan-out.ts). A pipeline is a shard part of the gateway, run by the
 * replicas that handle objects, with the role they are given: it builds its parts afresh at each start
 * (a replica that leads again lists again, as at a start), writes through the role's fence
 * (resource/fence.ts), and stops its parts in order, so no call of it is in flight once it has stopped.
 */

import type { Identity } from '../identity.ts';
import type { KubeClient } from '../kube/client.ts';
import type { DiscoveryCache } from '../kube/discovery.ts';
import type { Logger } from '../logging.ts';
import type { Part } from '../manager/manager.ts';
import type { Role } from '../manager/role.ts';
import { kubeReactorApi, type ReactorApi } from '../reactor/api.ts';
import { functionServiceCaller } from '../reactor/calls.ts';
import { ResourceReactor } from '../reactor/cycle.ts';
import { ObjectMemory } from '../reactor/memory.ts';
import type { ServedResource } from '../reactor/model.ts';
import { ObjectQueue, type QueueObserver, type QueueReadings } from '../reactor/queue.ts';
import { sharedCalls, WorkerShares } from '../reactor/shares.ts';
import type { Settings } from '../settings.ts';
import type { NamespaceSelection, NamespaceWatch } from '../watching/namespaces.ts';
import { ResourceWatch } from '../watching/resource-watch.ts';
import { sharedLabelSelector } from '../watching/selectors.ts';
import { Daemons } from './daemons.ts';
import { EventHandlers } from './event-handlers.ts';
import { EventFanOut } from './fan-out.ts';
import { fencedApi } from './fence.ts';
import type { Indexes, IndexFeed } from './indexes.ts';
import { Timers } from './timers.ts';

export interface PipelineOptions {
  /** Its handlers, bound and rebound by the gateway while it runs. */
  served: ServedResource;
  /** How the gateway names it in logs and keys it (`binding.ts`'s resourceKey). */
  key: string;
  client: KubeClient;
  discovery: DiscoveryCache;
  identity: Identity;
  settings: Settings;
  indexes: Indexes;
  /** Undefined serves all namespaces. */
  selection: NamespaceSelection | undefined;
  namespaceWatch: NamespaceWatch | undefined;
  logger: Logger;
  /** Receives a promise for each first listing made at a start. */
  onListing(listed: Promise<void>): void;
  /** What tells the metrics of it. */
  observer?: PipelineObserver;
}

/** What the metrics are told of one resource's pipeline, and read of it when scraped. */
export interface ObjectReadings {
  seen(): number;
  owned(): number;
}

export interface PipelineObserver {
  queue(readings: QueueReadings): QueueObserver;
  /** Its timers and its daemons running now. */
  background(readings: { timers(): number; daemons(): number }): void;
  /** Its objects the watches show, and those of them this gateway handles. */
  objects(readings: ObjectReadings): void;
  /** One of its watches started again after a failure or a 410 Gone. */
  watchRestarted(): void;
  /** A cycle's calls to a service waited: it held its share of the resource's workers (reactor/shares.ts). */
  shareWaited(service: string): void;
}

/** The parts of one run, from a start to its stop. */
interface Run {
  watch: ResourceWatch;
  indexFeed: IndexFeed;
  /** In the order they stop: no new events, then the cycles finish, then the other calls. */
  parts: Array<{ name: string; stop(): Promise<void> }>;
}

export class ResourcePipeline implements Part {
  readonly name: string;
  readonly placement = 'shard';
  readonly served: ServedResource;
  readonly #options: PipelineOptions;
  readonly #api: ReactorApi;
  #run: Run | undefined;

  constructor(options: PipelineOptions) {
    this.#options = options;
    this.served = options.served;
    this.name = `pipeline of ${options.key}`;
    this.#api = kubeReactorApi(
      options.client,
      options.discovery,
      options.served.resource,
      options.identity.fieldManager,
    );
  }

  start(role: Role): void {
    if (this.#run) return;
    this.#run = this.#build(role);
    this.#run.watch.start(this.#selector());
    this.#run.indexFeed.watching(); // its first listings are all known now
  }

  /** Stops the parts in order; what one of them fails to stop is logged by the caller, after the rest. */
  async stop(): Promise<void> {
    const run = this.#run;
    this.#run = undefined;
    if (!run) return;
    const failures: string[] = [];
    for (const part of run.parts) {
      try {
        await part.stop();
      } catch (error) {
        failures.push(`${part.name}: ${error instanceof Error ? error.message : error}`);
      }
    }
    if (failures.length > 0) throw new Error(failures.join('; '));
  }

  /**
   * Watches again when the handlers bound now require other labels; with `relist`, lists every object
   * again whatever they require (handlers came or went, and each object is to be looked at again).
   */
  async reselect(relist = false): Promise<void> {
    await this.#run?.watch.reselect(this.#selector(), relist);
  }

  #selector(): string | undefined {
    return sharedLabelSelector(this.served.bindings.flatMap((binding) => binding.handlers));
  }

  #build(role: Role): Run {
    const { served, identity, settings, logger } = this.#options;
    const api = fencedApi(this.#api, role);
    const memory = new ObjectMemory();
    const { observer: pipelineObserver } = this.#options;
    const shares = new WorkerShares({
      concurrency: settings.processing.concurrency,
      services: () => served.bindings.length,
      ...(pipelineObserver ? { onWait: (service: string) => pipelineObserver.shareWaited(service) } : {}),
    });
    const reactor = new ResourceReactor({
      served,
      api,
      call: sharedCalls(functionServiceCaller(settings.calls.serviceRetryDelaysS), shares),
      identity,
      logger,
      retryDelaysS: settings.calls.serviceRetryDelaysS,
      conflictRetryMs: settings.processing.conflictRetryMs,
      memory,
      beforeDeletion: (uid) => daemons.ended(uid),
    });
    const observer = pipelineObserver?.queue({
      get depth() {
        return queue.depth;
      },
      oldestUnhandledSeconds: () => queue.oldestUnhandledSeconds(),
    });
    const queue: ObjectQueue = new ObjectQueue({
      ...settings.processing,
      process: (object) => reactor.run(object),
      refresh: (object) => api.read(object),
      apiBack: (signal) => this.#options.client.whenBack(signal),
      logger,
      ...(observer ? { observer } : {}),
    });
    const eventHandlers = new EventHandlers(served, api, logger);
    const indexFeed = this.#options.indexes.feed(served);
    const daemons = new Daemons({
      served,
      api,
      memory,
      roundMs: settings.calls.daemonRoundMs,
      retryDelaysS: settings.calls.serviceRetryDelaysS,
      annotationPrefix: identity.annotationPrefix,
      logger,
    });
    const timers = new Timers({
      served,
      api,
      memory,
      retryDelaysS: settings.calls.serviceRetryDelaysS,
      concurrency: settings.processing.concurrency,
      annotationPrefix: identity.annotationPrefix,
      statusKey: identity.statusKey,
      logger,
    });
    pipelineObserver?.background({ timers: () => timers.count, daemons: () => daemons.running });
    const watch = new ResourceWatch({
      client: this.#options.client,
      resource: served.resource,
      logger,
      selection: this.#options.selection,
      namespaceWatch: this.#options.namespaceWatch,
      settings: settings.watching,
      onListing: (listed) => {
        this.#options.onListing(listed);
        indexFeed.listing(listed);
      },
      ...(pipelineObserver ? { onRestart: () => pipelineObserver.watchRestarted() } : {}),
      onEvent: (event) => fanOut.deliver(event),
    });
    const fanOut = new EventFanOut({ indexFeed, reactor, eventHandlers, timers, daemons, queue }, role);
    pipelineObserver?.objects({
      seen: () => watch.objectCount,
      // Counted when scraped: a walk of the uids, the ring's hash for each when sharding.
      owned: () => {
        let owned = 0;
        for (const uid of watch.uids()) if (role.owns(uid)) owned++;
        return owned;
      },
    });
    return {
      watch,
      indexFeed,
      parts: [
        // First: the calls waiting for its indexes go on (with what is indexed), so the queue can finish.
        { name: 'indexes', stop: () => indexFeed.stop() },
        { name: 'watch', stop: () => watch.stop() },
        { name: 'queue', stop: () => queue.stop() },
        { name: 'daemons', stop: () => daemons.stop() },
        { name: 'timers', stop: () => timers.stop() },
        { name: 'event handlers', stop: () => eventHandlers.stop() },
        // Last, with no call left: what this run indexed goes, since a run that follows lists again.
        { name: 'index entries', stop: async () => indexFeed.clear() },
      ],
    };
  }
}
