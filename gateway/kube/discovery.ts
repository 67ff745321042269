/**
 * Resolves resource names the way kubectl does (plural, singular, kind or short name, optionally
 * `plural.group`), and categories and `*` to the resources they select, from aggregated discovery:
 * two requests describe every resource of the cluster.
 */
import type { ResolvedResource, ResourceSelector } from '../../protocol/index.ts';
import type { KubeClient } from './client.ts';

const AGGREGATED = 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList';

export interface DiscoveredResource extends ResolvedResource {
  singular: string;
  shortNames: string[];
  categories: string[];
  subresources: string[];
  verbs: string[];
}

interface GroupDiscoveryList {
  kind: string;
  items: Array<{
    metadata: { name?: string };
    versions: Array<{
      version: string;
      resources: Array<{
        resource: string;
        responseKind?: { kind: string };
        scope: 'Namespaced' | 'Cluster';
        singularResource?: string;
        shortNames?: string[];
        categories?: string[];
        verbs: string[];
        subresources?: Array<{ subresource: string }>;
      }>;
    }>;
  }>;
}

export class ResourceNotFound extends Error {
  override name = 'ResourceNotFound';
}

export class Discovery {
  /** Every resource, each group's versions in the server's order of preference. */
  readonly resources: DiscoveredResource[];

  constructor(resources: DiscoveredResource[]) {
    this.resources = resources;
  }

  static async load(client: KubeClient): Promise<Discovery> {
    const lists = await Promise.all(
      ['/api', '/apis'].map((path) =>
        client.request<GroupDiscoveryList>(path, { headers: { accept: `${AGGREGATED}, application/json` } }),
      ),
    );
    const resources: DiscoveredResource[] = [];
    for (const list of lists) {
      if (list.kind !== 'APIGroupDiscoveryList') {
        throw new Error(
          'the API server does not serve aggregated discovery (apidiscovery.k8s.io/v2, Kubernetes ≥ 1.30)',
        );
      }
      for (const group of list.items) {
        for (const version of group.versions) {
          for (const resource of version.resources) {
            if (resource.resource.includes('/')) continue;
            resources.push({
              group: group.metadata.name ?? '',
              version: version.version,
              plural: resource.resource,
              kind: resource.responseKind?.kind ?? '',
              namespaced: resource.scope === 'Namespaced',
              singular: resource.singularResource ?? '',
              shortNames: resource.shortNames ?? [],
              categories: resource.categories ?? [],
              subresources: (resource.subresources ?? []).map((sub) => sub.subresource),
              verbs: resource.verbs,
            });
          }
        }
      }
    }
    return new Discovery(resources);
  }

  /** Finds the one resource a selector means, or says precisely why there is none. */
  resolve(selector: ResourceSelector): DiscoveredResource {
    const { name, group } = splitGroup(selector);
    if (name === undefined || name === EVERY_RESOURCE) {
      throw new TypeError(`"${describe(selector)}" selects several resources, not one`);
    }
    const wanted = name.toLowerCase();
    // Discovery says '' for a singular or kind an aggregated API leaves out: that names no resource.
    if (wanted === '')
      throw new ResourceNotFound(`"${describe(selector)}" has no resource name before its group`);
    const matches = this.resources.filter(
      (resource) =>
        (group === undefined || resource.group === group) &&
        (selector.version === undefined || resource.version === selector.version) &&
        (resource.plural === wanted ||
          resource.singular === wanted ||
          resource.kind.toLowerCase() === wanted ||
          resource.shortNames.includes(wanted)),
    );
    // The first version listed for a group is its preferred one.
    const preferred = new Map<string, DiscoveredResource>();
    for (const match of matches) if (!preferred.has(match.group)) preferred.set(match.group, match);
    const candidates = [...preferred.values()];
    if (candidates.length === 0)
      throw new ResourceNotFound(`no resource "${describe(selector)}" in API discovery`);
    if (candidates.length === 1) return candidates[0] as DiscoveredResource;
    // kubectl gives the core group precedence; anything else needs the user to say which group.
    const core = candidates.find((candidate) => candidate.group === '');
    if (core) return core;
    const names = candidates.map((candidate) => `${candidate.plural}.${candidate.group}`).join(', ');
    throw new ResourceNotFound(`"${describe(selector)}" is ambiguous: ${names}; name the group`);
  }

  /**
   * The resources a category or `*` selects now, each in its preferred version unless one is named
   * (as Kopf does, and unlike a name, no group takes precedence): those that can be listed and
   * watched, Events excepted: the gateway posts them about the objects it handles, so handling them
   * would feed itself. A name selects them explicitly.
   */
  select(selector: ResourceSelector): DiscoveredResource[] {
    if (!selectsSeveral(selector)) return [this.resolve(selector)];
    const { group } = splitGroup(selector);
    const seen = new Set<string>();
    const selected: DiscoveredResource[] = [];
    for (const resource of this.resources) {
      if (group !== undefined && resource.group !== group) continue;
      if (selector.version !== undefined && resource.version !== selector.version) continue;
      if (selector.category !== undefined && !resource.categories.includes(selector.category)) continue;
      const key = `${resource.plural}.${resource.group}`;
      if (seen.has(key)) continue; // the first version listed is the preferred one
      seen.add(key);
      if (!resource.verbs.includes('list') || !resource.verbs.includes('watch')) continue;
      if (resource.plural === 'events' && (resource.group === '' || resource.group === 'events.k8s.io'))
        continue;
      selected.push(resource);
    }
    return selected;
  }
}

/** `*`, Kopf's EVERYTHING: every resource (of the group and version given). */
export const EVERY_RESOURCE = '*';

/** Whether a selector is for several resources (a category, or `*`), which `select` finds, not `resolve`. */
export function selectsSeveral(selector: ResourceSelector): boolean {
  return selector.category !== undefined || splitGroup(selector).name === EVERY_RESOURCE;
}

/** How often discovery is loaded at most: a lookup of a name it does not know waits this long to reload. */
export const DISCOVERY_FRESH_MS = 1000;

/** Discovery kept between lookups, reloaded (at most once a second) when a name is not found. */
export class DiscoveryCache {
  readonly #client: KubeClient;
  #current: Promise<Discovery> | undefined;
  #loadedAt = 0;

  constructor(client: KubeClient) {
    this.#client = client;
  }

  reload(): Promise<Discovery> {
    this.#loadedAt = Date.now();
    const loading = Discovery.load(this.#client);
    this.#current = loading;
    // A load that failed is not kept: the next lookup loads again rather than fail the same way.
    loading.catch(() => {
      if (this.#current === loading) this.#current = undefined;
    });
    return loading;
  }

  /**
   * Discovery loaded (or being loaded) less than DISCOVERY_FRESH_MS ago, else loaded again: the steps
   * of the start (the manifests' scope check, the rights check, the binding) share one load.
   */
  fresh(): Promise<Discovery> {
    if (this.#current && Date.now() - this.#loadedAt < DISCOVERY_FRESH_MS) return this.#current;
    return this.reload();
  }

  async resolve(selector: ResourceSelector): Promise<DiscoveredResource> {
    try {
      return (await (this.#current ?? this.reload())).resolve(selector);
    } catch (error) {
      if (!(error instanceof ResourceNotFound) || Date.now() - this.#loadedAt < DISCOVERY_FRESH_MS)
        throw error;
      return (await this.reload()).resolve(selector);
    }
  }
}

function splitGroup(selector: ResourceSelector): { name: string | undefined; group: string | undefined } {
  const { name, group } = selector;
  if (group !== undefined || name === undefined || !name.includes('.')) return { name, group };
  const dot = name.indexOf('.');
  return { name: name.slice(0, dot), group: name.slice(dot + 1) };
}

export function describe(selector: ResourceSelector): string {
  if (selector.category === undefined) {
    return [selector.name, selector.version, selector.group].filter(Boolean).join('.');
  }
  const narrowed = [selector.group === '' ? 'core' : selector.group, selector.version].filter(Boolean);
  return `category ${selector.category}${narrowed.length > 0 ? ` of ${narrowed.join('/')}` : ''}`;
}

/**
 * The REST path of a resource's collection, in one namespace or across all of them. Names come from
 * objects and replies: escaped, so that none (`../secrets/x`) can lead a request to another path.
 */
export function collectionPath(resource: ResolvedResource, namespace?: string): string {
  const base =
    resource.group === '' ? `/api/${resource.version}` : `/apis/${resource.group}/${resource.version}`;
  return namespace && resource.namespaced
    ? `${base}/namespaces/${encodeURIComponent(namespace)}/${resource.plural}`
    : `${base}/${resource.plural}`;
}

export function objectPath(resource: ResolvedResource, name: string, namespace?: string): string {
  return `${collectionPath(resource, namespace)}/${encodeURIComponent(name)}`;
}

/** What names the resource of an object's apiVersion and kind (`apps/v1`, `Deployment`). */
export function kindSelector(apiVersion: string, kind: string): ResourceSelector {
  const slash = apiVersion.indexOf('/');
  return slash < 0
    ? { group: '', version: apiVersion, name: kind }
    : { group: apiVersion.slice(0, slash), version: apiVersion.slice(slash + 1), name: kind };
}

/** How the gateway tells resources apart, as it keys what serves each. */
export function resourceKey(resource: DiscoveredResource): string {
  return `${resource.plural}.${resource.group}/${resource.version}`;
}
