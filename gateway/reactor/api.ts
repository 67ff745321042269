/**
 * The few API operations the reactor needs, behind a small interface: the gateway binds them to the
 * Kubernetes API for one resource; unit tests put a fake behind it and see every write the cycle makes.
 */
import type { KubernetesEvent, KubernetesObject } from '../../protocol/index.ts';
import { applyObject } from '../kube/apply.ts';
import type { KubeClient } from '../kube/client.ts';
import { type DiscoveredResource, type DiscoveryCache, objectPath } from '../kube/discovery.ts';
import { ignoreNotFound } from '../kube/errors.ts';
import { postEvents } from '../kube/events.ts';
import { applyChanges, applyJsonPatch, type JsonPatch, type ObjectChanges } from '../kube/patcher.ts';
import type { Logger } from '../logging.ts';
import type { NamedObject } from './outcomes.ts';

export interface ReactorApi {
  /** A JSON Patch of the object, guarded by its `test` operations. */
  jsonPatch(object: KubernetesObject, patch: JsonPatch): Promise<KubernetesObject>;
  /** The changes' merge patches, status first; the object as last written, or undefined if nothing was. */
  applyChanges(object: KubernetesObject, changes: ObjectChanges): Promise<KubernetesObject | undefined>;
  /** Creates or updates an object a handler asked for, in `namespace` unless it names its own. */
  applyObject(object: NamedObject, namespace: string | undefined): Promise<void>;
  postEvents(object: KubernetesObject, events: KubernetesEvent[], log: Logger): Promise<void>;
  /** The object as the API has it now; undefined when it is gone. */
  read(object: KubernetesObject): Promise<KubernetesObject | undefined>;
}

export function kubeReactorApi(
  client: KubeClient,
  discovery: DiscoveryCache,
  resource: DiscoveredResource,
  fieldManager: string,
): ReactorApi {
  return {
    jsonPatch: (object, patch) => applyJsonPatch(client, resource, object, patch, fieldManager),
    applyChanges: (object, changes) => applyChanges(client, resource, object, changes, fieldManager),
    async applyObject(object, namespace) {
      const [group, version] = object.apiVersion.includes('/')
        ? object.apiVersion.split('/')
        : ['', object.apiVersion];
      const kind = await discovery.resolve({
        group: group as string,
        version: version as string,
        name: object.kind,
      });
      await applyObject(client, kind, object, fieldManager, namespace);
    },
    postEvents: (object, events, log) => postEvents(client, object, events, log),
    read: ({ metadata }) =>
      ignoreNotFound(client.get<KubernetesObject>(objectPath(resource, metadata.name, metadata.namespace))),
  };
}
