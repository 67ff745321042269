/**
 * The few API operations the reactor needs, behind a small interface: the gateway binds them to the
 * Kubernetes API for one resource; unit tests put a fake behind it and see every write the cycle makes.
 */
import type { KubernetesEvent, KubernetesObject } from '../../protocol/index.ts';
import { applyObject } from '../kube/apply.ts';
import type { KubeClient } from '../kube/client.ts';
import {
  type DiscoveredResource,
  type DiscoveryCache,
  kindSelector,
  objectPath,
  ResourceNotFound,
} from '../kube/discovery.ts';
import { ApiError, ignoreNotFound, isStaleWrite } from '../kube/errors.ts';
import { postEvents } from '../kube/events.ts';
import { applyChanges, applyJsonPatch } from '../kube/patcher.ts';
import { clientFor } from '../kube/written-as.ts';
import type { Logger } from '../logging.ts';
import type { JsonPatch, ObjectChanges } from '../state/changes.ts';
import type { NamedObject } from './outcomes.ts';

export interface ReactorApi {
  /** A JSON Patch of the object, guarded by its `test` operations. */
  jsonPatch(object: KubernetesObject, patch: JsonPatch): Promise<KubernetesObject>;
  /**
   * The changes' merge patches, status first; the object as last written, or undefined if nothing was.
   * `guarded`: refused (409) if the object changed since `object` (see kube/patcher.ts).
   */
  applyChanges(
    object: KubernetesObject,
    changes: ObjectChanges,
    guarded?: boolean,
  ): Promise<KubernetesObject | undefined>;
  /**
   * Creates or updates an object a handler asked for, in `namespace` unless it names its own, as the
   * account it is marked to be written as (kube/written-as.ts); the object as applied (undefined from
   * fakes that keep none).
   */
  applyObject(object: NamedObject, namespace: string | undefined): Promise<KubernetesObject | undefined>;
  /**
   * Events about the object, or about the objects they name (completed from those `applied`), each as
   * the account it is marked to be written as.
   */
  postEvents(
    object: KubernetesObject,
    events: KubernetesEvent[],
    log: Logger,
    applied?: readonly KubernetesObject[],
  ): Promise<void>;
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
    applyChanges: (object, changes, guarded) =>
      applyChanges(client, resource, object, changes, fieldManager, guarded),
    async applyObject(object, namespace) {
      const kind = await discovery.resolve(kindSelector(object.apiVersion, object.kind));
      return applyObject(clientFor(client, object), kind, object, fieldManager, namespace);
    },
    postEvents: (object, events, log, applied) => postEvents(client, object, events, log, applied),
    async read({ metadata }) {
      const path = objectPath(resource, metadata.name, metadata.namespace);
      const now = await ignoreNotFound(client.get<KubernetesObject>(path));
      // A namesake created since is another object (its own slot, its own state): this one is gone.
      return now?.metadata.uid === metadata.uid ? now : undefined;
    },
  };
}

/**
 * Applies the objects one after another, in order; the objects as applied, for events about them. An
 * object applied twice (two handlers' child of one name) is applied the second time over the version
 * the first made, not over the one the scope read before either (dispatch/scope.ts ownOrNew).
 */
export function applyObjects(
  api: ReactorApi,
  objects: readonly NamedObject[],
  namespace: string | undefined,
): Promise<KubernetesObject[]> {
  return objectApplier(api, namespace)(objects);
}

/** Why a handler's children could not be applied, and when the apiserver asked to be asked again. */
export interface ChildrenRefused {
  message: string;
  retryAfterSeconds?: number;
}

/** How applying one handler's children went: the objects as applied, or what stopped them. */
export type ChildrenApplied = { applied: KubernetesObject[] } | { failed: ChildrenRefused };

/**
 * Applies each handler's children, handler after handler: a child the apiserver refuses (RBAC or
 * admission, invalid, another field manager's, busy) or whose kind it does not serve fails its
 * handler's group only (its later children are not tried), and the next group goes on. What is not
 * the child's doing throws, as any write of the cycle does: a stale child (changed since the scope
 * read it: the cycle looks again at the newer one), the API out of reach, the replica fenced out.
 */
export async function applyEachHandlers(
  api: ReactorApi,
  groups: readonly (readonly NamedObject[])[],
  namespace: string | undefined,
): Promise<ChildrenApplied[]> {
  const apply = objectApplier(api, namespace);
  const results: ChildrenApplied[] = [];
  for (const objects of groups) {
    try {
      results.push({ applied: await apply(objects) });
    } catch (error) {
      const refused =
        (error instanceof ApiError && !isStaleWrite(error)) || error instanceof ResourceNotFound;
      if (!refused) throw error;
      const said = error instanceof ApiError ? error.retryAfterSeconds : undefined;
      results.push({
        failed: {
          message: error.message,
          ...(said === undefined ? {} : { retryAfterSeconds: said }),
        },
      });
    }
  }
  return results;
}

/** Applies objects in order, each over the version an earlier apply of the same object made. */
function objectApplier(api: ReactorApi, namespace: string | undefined) {
  const versions = new Map<string, string>();
  return async (objects: readonly NamedObject[]): Promise<KubernetesObject[]> => {
    const applied: KubernetesObject[] = [];
    for (const object of objects) {
      const key = JSON.stringify([
        object.apiVersion,
        object.kind,
        object.metadata.namespace ?? namespace,
        object.metadata.name,
      ]);
      const resourceVersion = versions.get(key);
      const made = await api.applyObject(
        resourceVersion === undefined
          ? object
          : { ...object, metadata: { ...object.metadata, resourceVersion } },
        namespace,
      );
      if (!made) continue;
      applied.push(made);
      if (made.metadata.resourceVersion !== undefined) versions.set(key, made.metadata.resourceVersion);
    }
    return applied;
  };
}
