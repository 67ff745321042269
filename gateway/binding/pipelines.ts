/**
 * The pipelines of the watched resources: one made for a resource the first time handlers of it are
 * bound (binder.ts), with where its objects keep the gateway's state, and run as a shard part
 * of the gateway. Their first listings tell when the gateway is ready.
 */
import type { Identity } from '../identity.ts';
import type { KubeClient } from '../kube/client.ts';
import { type DiscoveredResource, resourceKey } from '../kube/discovery.ts';
import { ApiError } from '../kube/errors.ts';
import type { Logger } from '../logging.ts';
import type { Manager } from '../manager/manager.ts';
import type { ServedResource } from '../reactor/model.ts';
import { type PipelineObserver, type PipelineOptions, ResourcePipeline } from '../resource/pipeline.ts';
import { statusKeeps, versionSchema } from '../state/schema.ts';
import { type StateLocation, StateStorage } from '../state/storage.ts';
import { bindHandlers, type Unresolved } from './binding.ts';

/** What every pipeline is made with, as given. */
type Shared = Pick<
  PipelineOptions,
  'client' | 'discovery' | 'identity' | 'settings' | 'indexes' | 'selection' | 'namespaceWatch'
>;

export interface PipelinesOptions extends Shared {
  /** What tells the metrics of the pipeline of a resource, by its key; undefined keeps none. */
  observe: ((key: string) => PipelineObserver) | undefined;
  manager: Manager;
  logger: Logger;
}

export class Pipelines {
  readonly #options: PipelinesOptions;
  /** The first listings of the pipelines started so far. */
  readonly #listings: Promise<void>[] = [];
  #listed = false;

  constructor(options: PipelinesOptions) {
    this.#options = options;
  }

  /** Makes the pipeline of `resource` with `items` bound, as a part of the gateway (started at once if it runs). */
  async make(resource: DiscoveredResource, items: readonly Unresolved[]): Promise<ResourcePipeline> {
    const { observe, manager, logger, ...shared } = this.#options;
    const { client, identity, settings } = shared;
    const location =
      settings.persistence.stateIn === 'annotations'
        ? 'annotations'
        : await stateLocation(client, resource, identity, logger);
    const served: ServedResource = {
      resource,
      bindings: [],
      storage: new StateStorage(location, identity, settings.persistence.adoptKopf),
    };
    bindHandlers(served, items);
    const key = resourceKey(resource);
    const pipeline = new ResourcePipeline({
      ...shared,
      served,
      key,
      logger: logger.child({ resource: key }),
      onListing: (listed) => this.#listings.push(listed),
      ...(observe ? { observer: observe(key) } : {}),
    });
    await manager.add('resources', pipeline);
    return pipeline;
  }

  /** Resolves once the first listings of the pipelines started so far are in: the gateway is ready then. */
  async synced(): Promise<void> {
    await Promise.all(this.#listings);
    this.#listed = true;
  }

  /** Why the gateway is not ready yet, as far as the pipelines go. */
  notReady(): string[] {
    return this.#listed ? [] : ['the watched resources are not listed yet'];
  }
}

/**
 * Where a resource's objects keep the gateway's state. In the status when the status is a subresource
 * whose schema keeps our key: then results and state share one write. Otherwise annotations.
 * Built-in resources have fixed status schemas.
 */
export async function stateLocation(
  client: KubeClient,
  resource: DiscoveredResource,
  identity: Identity,
  logger: Logger,
): Promise<StateLocation> {
  if (!resource.subresources.includes('status') || resource.group === '' || !resource.group.includes('.')) {
    return 'annotations';
  }
  try {
    const crd = await client.get<Parameters<typeof versionSchema>[0]>(
      `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${resource.plural}.${resource.group}`,
    );
    if (statusKeeps(versionSchema(crd, resource.version), identity.statusKey)) return 'status';
    logger.warning(
      `${resource.plural}.${resource.group}: the schema of status prunes status.${identity.statusKey}; ` +
        'keeping state in annotations (add x-kubernetes-preserve-unknown-fields to status to save a write per change)',
    );
    return 'annotations';
  } catch (error) {
    // Without read access to CRDs, try the status; a pruned write is detected and moves state to annotations.
    if (error instanceof ApiError && (error.status === 403 || error.status === 404)) return 'status';
    throw error;
  }
}
