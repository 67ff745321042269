/**
 * `causeway release`: the escape hatch for an object stuck in deletion because the operator that put
 * its finalizer there is gone. Removes that one finalizer, nothing else, without calling any handler.
 */
import type { KubeConfig } from '@kubernetes/client-node';
import type { KubernetesObject } from '../../../../protocol/index.ts';
import { KubeClient } from '../../../kube/client.ts';
import { Discovery, objectPath } from '../../../kube/discovery.ts';
import { loadKubeConfig } from '../../../kube/kubeconfig.ts';
import { hasFinalizer, removeFinalizer } from '../../../reactor/finalizers.ts';

export interface ReleaseOptions {
  resource: string;
  name: string;
  namespace?: string;
  finalizer: string;
  fieldManager: string;
}

/** Returns what happened, in words for the terminal. */
export async function release(
  options: ReleaseOptions,
  kubeconfig: KubeConfig = loadKubeConfig(),
): Promise<string> {
  const client = await KubeClient.fromConfig(kubeconfig);
  const resource = (await Discovery.load(client)).resolve({ name: options.resource });
  const namespace = resource.namespaced ? (options.namespace ?? 'default') : undefined;
  const path = objectPath(resource, options.name, namespace);
  const object = await client.get<KubernetesObject>(path);
  const where = namespace ? `${namespace}/${options.name}` : options.name;
  if (!hasFinalizer(object, options.finalizer))
    return `${resource.plural} ${where} has no finalizer ${options.finalizer}`;
  await client.patch(path, 'json', removeFinalizer(object, options.finalizer), {
    fieldManager: options.fieldManager,
  });
  return `released ${resource.plural} ${where}: removed finalizer ${options.finalizer}${object.metadata.deletionTimestamp ? '; its deletion can now complete' : ''}`;
}
