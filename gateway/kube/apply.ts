/**
 * `kubectl apply --server-side` for manifests: used by the quickstart, the tests and the benchmarks to
 * put CRDs and objects in place. Waits for CRDs to be established before applying their objects.
 */
import { parseAllDocuments } from 'yaml';
import type { KubernetesObject } from '../../protocol/index.ts';
import { sleep } from '../timing.ts';
import type { KubeClient } from './client.ts';
import { Discovery, objectPath, ResourceNotFound } from './discovery.ts';

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
  let discovery = await Discovery.load(client);
  const applied: KubernetesObject[] = [];
  for (const object of objects) {
    const [group, version] = object.apiVersion.includes('/')
      ? object.apiVersion.split('/')
      : ['', object.apiVersion];
    const selector = { group: group as string, version: version as string, name: object.kind };
    let resource = tryResolve(discovery, selector);
    if (!resource) {
      // Served only once its CRD is established: refresh discovery until it shows up.
      const deadline = Date.now() + (options.timeoutMs ?? 30_000);
      while (!resource) {
        if (Date.now() > deadline)
          throw new ResourceNotFound(`no resource ${object.kind} in ${object.apiVersion}`);
        await sleep(100);
        discovery = await Discovery.load(client);
        resource = tryResolve(discovery, selector);
      }
    }
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
  }
  return applied;
}

function tryResolve(discovery: Discovery, selector: { group: string; version: string; name: string }) {
  try {
    return discovery.resolve(selector);
  } catch (error) {
    if (error instanceof ResourceNotFound) return undefined;
    throw error;
  }
}
