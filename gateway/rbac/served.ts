/**
 * What a gateway serves, from its services as connected (handler-sources.ts) and discovery: the
 * resources its handlers watch, the kinds their answers may apply, whether it reviews admission.
 * rbac.ts turns this into rules.
 */
import { isAdmissionKind, type KubernetesObject } from '../../protocol/index.ts';
import { outsideScope, resourcesNamed } from '../binding/binding.ts';
import type { FunctionService } from '../dispatch/function-service.ts';
import {
  type DiscoveredResource,
  type Discovery,
  describe,
  resourceKey,
  selectsSeveral,
} from '../kube/discovery.ts';
import type { ImpersonatedService, NamespacedName, RbacResource } from './rbac.ts';

export interface Served {
  /** What the resource handlers name, within their service's scope: watched and patched. */
  watched: RbacResource[];
  /** The kinds the services' scopes let their answers apply; `any` when one says `*`. */
  children: RbacResource[];
  /** Whether a validate or mutate handler is served: the gateway keeps webhook configurations. */
  admission: boolean;
  /** The services that declare no scope and are pinned none: what they may apply cannot be known. */
  unscoped: string[];
  /** The handlers that name a resource the cluster does not serve (yet): no rule for it can be made. */
  unserved: string[];
  /** Each service connected to be written as its account (--impersonate), with what it writes. */
  impersonated: ImpersonatedService[];
}

export function servedBy(services: readonly FunctionService[], discovery: Discovery): Served {
  const watched = new Map<string, RbacResource>();
  const children = new Map<string, RbacResource>();
  let admission = false;
  const unscoped: string[] = [];
  const unserved: string[] = [];
  const impersonated: ImpersonatedService[] = [];
  for (const service of services) {
    const own = { watched: new Map<string, RbacResource>(), children: new Map<string, RbacResource>() };
    for (const handler of service.manifest.handlers) {
      const named = resourcesNamed(handler, discovery);
      if (named.length === 0 && !selectsSeveral(handler.resource)) {
        unserved.push(`handler "${handler.id}" names ${describe(handler.resource)}`);
        continue;
      }
      const inScope = named.filter((resource) => !outsideScope(service, handler, resource));
      if (inScope.length === 0) continue;
      if (isAdmissionKind(handler.kind)) admission = true;
      else
        for (const resource of inScope) {
          watched.set(resourceKey(resource), rbacResource(resource));
          own.watched.set(resourceKey(resource), rbacResource(resource));
        }
    }
    // The narrower of the two: a declared scope lies within the pin (FunctionService.connect refuses
    // one beyond it), and the gateway confines answers to the pin.
    const scope = service.manifest.scope ?? service.scope;
    if (!scope) unscoped.push(service.name);
    for (const name of scope?.children ?? []) {
      // Every kind a child may be of: a namespaced resource (the gateway refuses a cluster-scoped child),
      // never a subresource, which `*` in a rule would grant too (pods/exec among them).
      const kinds =
        name === '*'
          ? discovery.select({ name }).filter(({ namespaced }) => namespaced)
          : [discovery.resolve({ name })];
      for (const resource of kinds) {
        children.set(resourceKey(resource), rbacResource(resource));
        own.children.set(resourceKey(resource), rbacResource(resource));
      }
    }
    if (service.account) {
      const namespaces = service.scope?.namespaces;
      impersonated.push({
        account: service.account,
        watched: [...own.watched.values()],
        children: [...own.children.values()],
        ...(namespaces ? { namespaces } : {}),
      });
    }
  }
  return {
    watched: [...watched.values()],
    children: [...children.values()],
    admission,
    unscoped,
    unserved,
    impersonated,
  };
}

function rbacResource({ group, plural, namespaced, subresources }: DiscoveredResource): RbacResource {
  return { group, plural, namespaced, subresources };
}

/**
 * The Secrets FunctionService objects name (services/function-service-objects.ts): the one the gateway
 * issues the service's certificate into (`spec.tls.secretName`), and the shared secret it reads
 * (`spec.secretRef`).
 */
export function functionServiceSecrets(objects: readonly KubernetesObject[]): {
  certificates: NamespacedName[];
  read: NamespacedName[];
} {
  const certificates: NamespacedName[] = [];
  const read: NamespacedName[] = [];
  for (const object of objects) {
    const namespace = object.metadata.namespace ?? 'default';
    const spec = (object.spec ?? {}) as { tls?: { secretName?: string }; secretRef?: { name?: string } };
    if (spec.tls?.secretName) certificates.push({ namespace, name: spec.tls.secretName });
    if (spec.secretRef?.name) read.push({ namespace, name: spec.secretRef.name });
  }
  return { certificates, read };
}
