/**
 * The watches of one served resource: one cluster-wide, one per named namespace, or one per
 * namespace that matches patterns as namespaces come and go; all with the resource's label selector,
 * and restarted when that selector changes (new handlers arrived).
 */
import type { KubeClient } from '../kube/client.ts';
import { collectionPath, type DiscoveredResource } from '../kube/discovery.ts';
import { type WatchEvent, Watcher } from '../kube/watcher.ts';
import type { Logger } from '../logging.ts';
import type { Settings } from '../settings.ts';
import type { NamespaceSelection, NamespaceWatch } from './namespaces.ts';

export interface ResourceWatchOptions {
  client: KubeClient;
  resource: DiscoveredResource;
  logger: Logger;
  /** Undefined serves all namespaces. */
  selection: NamespaceSelection | undefined;
  namespaceWatch: NamespaceWatch | undefined;
  settings: Settings['watching'];
  onEvent(event: WatchEvent): void;
  /** Receives a promise for each first listing made at start. */
  onListing(listed: Promise<void>): void;
  /** Told when one of its watches starts again after a failure or a 410 Gone. */
  onRestart?(): void;
}

export class ResourceWatch {
  readonly #options: ResourceWatchOptions;
  /** By namespace; the key `''` is the cluster-wide watch. */
  readonly #watchers = new Map<string, Watcher>();
  #selector: string | undefined;
  #started = false;
  #unsubscribe: (() => void) | undefined;

  constructor(options: ResourceWatchOptions) {
    this.#options = options;
  }

  /** How many objects its watches show now. */
  get objectCount(): number {
    let count = 0;
    for (const watcher of this.#watchers.values()) count += watcher.objectCount;
    return count;
  }

  /** The uids of the objects its watches show now. */
  *uids(): Generator<string> {
    for (const watcher of this.#watchers.values()) yield* watcher.uids();
  }

  start(selector: string | undefined): void {
    this.#selector = selector;
    this.#started = true;
    const { resource, selection, namespaceWatch } = this.#options;
    if (!resource.namespaced || !selection) this.#watch('', true);
    else if (selection.names) for (const namespace of selection.names) this.#watch(namespace, true);
    else {
      this.#unsubscribe = namespaceWatch?.subscribe({
        added: (namespace) => this.#watch(namespace, false),
        removed: (namespace) => void this.#unwatch(namespace),
      });
    }
  }

  /** Watches again, with another selector (or the same, to list every object again: `relist`), whatever is watched now. */
  async reselect(selector: string | undefined, relist = false): Promise<void> {
    if (!this.#started || (selector === this.#selector && !relist)) return;
    this.#selector = selector;
    const namespaces = [...this.#watchers.keys()];
    await Promise.all(namespaces.map((namespace) => this.#unwatch(namespace)));
    for (const namespace of namespaces) this.#watch(namespace, false);
  }

  async stop(): Promise<void> {
    this.#unsubscribe?.();
    await Promise.all([...this.#watchers.keys()].map((namespace) => this.#unwatch(namespace)));
  }

  #watch(namespace: string, initial: boolean): void {
    const { client, resource, logger, settings, onEvent, onListing } = this.#options;
    const path = collectionPath(resource, namespace || undefined);
    const listed = Promise.withResolvers<void>();
    if (initial) onListing(listed.promise);
    let listing = initial;
    const watcher = new Watcher({
      client,
      path,
      logger,
      onSynced: () => {
        listing = false;
        listed.resolve();
      },
      onEvent: (event) => onEvent(listing ? { ...event, initial: true } : event),
      ...(this.#options.onRestart ? { onRestart: this.#options.onRestart } : {}),
      settings,
      ...(this.#selector ? { labelSelector: this.#selector } : {}),
    });
    this.#watchers.set(namespace, watcher);
    watcher.start();
    logger.info('watching', { path, ...(this.#selector ? { labels: this.#selector } : {}) });
  }

  async #unwatch(namespace: string): Promise<void> {
    const watcher = this.#watchers.get(namespace);
    if (!watcher) return;
    this.#watchers.delete(namespace);
    await watcher.stop();
    this.#options.logger.info('no longer watching', {
      path: collectionPath(this.#options.resource, namespace || undefined),
    });
  }
}
