/**
 * `kubectl apply --server-side` for manifests: used by the quickstart, the tests and the benchmarks to
 * put CRDs and objects in place. Waits for CRDs to be established before applying their objects.
 */
import { parseAllDocuments } from 'yaml';
import type { KubernetesObject, ObjectToApply, ResourceSelector } from '../../protocol/index.ts';
import { sleep } from '../timing.ts';
import type { KubeClient } from './client.ts';
import {
  type DiscoveredResource,
  Discovery,
  describe,
  kindSelector,
  objectPath,
  ResourceNotFound,
} from './discovery.ts';

export function parseManifests(text: string): KubernetesObject[] {
  return parseAllDocuments(text)
    .map((document) => {
      if (document.errors.length > 0) throw new Error(`invalid YAML: ${document.errors[0]?.message}`);
      return document.toJS() as KubernetesObject | null;
    })
    .filter((object): object is KubernetesObject => object !== null);
}

export async function applyManifests(
  client: KubeClient,
  objects: KubernetesObject[],
  options: { fieldManager: string; namespace?: string; timeoutMs?: number },
): Promise<KubernetesObject[]> {
  const timeoutMs = options.timeoutMs ?? 30_000;
  let discovery = await Discovery.load(client);
  /** Resolves from discovery, refreshing it until the resource is served (a CRD just applied). */
  const served = async (selector: ResourceSelector) => {
    const deadline = Date.now() + timeoutMs;
    for (let resource = tryResolve(discovery, selector); ; resource = tryResolve(discovery, selector)) {
      if (resource) return resource;
      if (Date.now() > deadline)
        throw new ResourceNotFound(`no resource ${describe(selector)} within ${timeoutMs} ms`);
      await sleep(100);
      discovery = await Discovery.load(client);
    }
  };
  const applied: KubernetesObject[] = [];
  for (const object of objects) {
    const resource = await served(kindSelector(object.apiVersion, object.kind));
    const namespace = resource.namespaced
      ? (object.metadata.namespace ?? options.namespace ?? 'default')
      : undefined;
    const body = namespace ? { ...object, metadata: { ...object.metadata, namespace } } : object;
    const result = await client.patch<KubernetesObject>(
      objectPath(resource, object.metadata.name, namespace),
      'apply',
      body,
      {
        fieldManager: options.fieldManager,
        force: true,
      },
    );
    applied.push(result);
    if (object.kind === 'CustomResourceDefinition' && object.apiVersion.startsWith('apiextensions.k8s.io/')) {
      // Like `kubectl wait --for=condition=established`: its objects can be applied and watched on return.
      const spec = (object as unknown as { spec: { group: string; names: { plural: string } } }).spec;
      await served({ group: spec.group, name: spec.names.plural });
    }
  }
  return applied;
}

/**
 * Server-side apply of one object a handler asked for; a namespaced one without a namespace goes to
 * `defaultNamespace`. Not forced: fields another manager owns stay theirs (the apply fails with a
 * conflict that names them), and the gateway's own it updates as it pleases.
 */
export function applyObject(
  client: KubeClient,
  resource: DiscoveredResource,
  object: ObjectToApply & { metadata: { name: string } },
  fieldManager: string,
  defaultNamespace: string | undefined,
): Promise<KubernetesObject> {
  const namespace = resource.namespaced ? (object.metadata.namespace ?? defaultNamespace) : undefined;
  if (resource.namespaced && !namespace) {
    throw new Error(`${object.kind} ${object.metadata.name} is namespaced but has no namespace`);
  }
  const body = namespace ? { ...object, metadata: { ...object.metadata, namespace } } : object;
  return client.patch<KubernetesObject>(
    objectPath(resource, object.metadata.name, namespace),
    'apply',
    body,
    { fieldManager },
  );
}

function tryResolve(discovery: Discovery, selector: ResourceSelector) {
  try {
    return discovery.resolve(selector);
  } catch (error) {
    if (error instanceof ResourceNotFound) return undefined;
    throw error;
  }
}
