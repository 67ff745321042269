/**
 * `causeway explain`'s reading: the object through discovery as the gateway resolves it, the handlers
 * from where the gateway gets them (an operator module in this process, services over HTTP, or the
 * FunctionService objects of a namespace), the gateway's events about the object, and its peering
 * Leases; then explain.ts judges.
 */
import type { KubernetesObject } from '../../protocol/index.ts';
import { outsideScope, resourcesNamed } from '../binding/binding.ts';
import { stateLocation } from '../binding/pipelines.ts';
import { connectServices, type HandlerReading } from '../binding/sources.ts';
import type { FunctionService } from '../dispatch/function-service.ts';
import { scopeName } from '../dispatch/scope.ts';
import type { Identity } from '../identity.ts';
import type { KubeClient } from '../kube/client.ts';
import { type DiscoveredResource, type Discovery, objectPath, resourceKey } from '../kube/discovery.ts';
import { isNotFound } from '../kube/errors.ts';
import { EVENT_COMPONENT } from '../kube/events.ts';
import type { Logger } from '../logging.ts';
import { listMembers } from '../peering/leases.ts';
import { aliveByWallClock, ownerOf, viewOf } from '../peering/members.ts';
import type { Candidate } from '../reactor/model.ts';
import { explain, type ObjectEvent } from './explain.ts';
import type { Explanation } from './explanation.ts';

export interface ExplainRequest extends HandlerReading {
  /** As kubectl names a resource: plural, singular, kind or short name, or `plural.group`. */
  resource: string;
  name: string;
  /** For a namespaced resource; `default` when not given. */
  namespace?: string;
  identity: Identity;
  stateIn: 'auto' | 'annotations';
  adoptKopf?: string;
  /** Where the gateways of this identity peer (their Leases); no owner is said when there are none. */
  peeringNamespace: string;
  /** The namespace the gateway runs in, which it serves to no function service; undefined: none. */
  ownNamespace?: string;
}

/** The object explained; throws, saying what, when it is not there or a service cannot be read. */
export async function explainObject(
  request: ExplainRequest,
  client: KubeClient,
  discovery: Discovery,
  logger: Logger,
): Promise<Explanation> {
  const resource = discovery.resolve({ name: request.resource });
  const namespace = resource.namespaced ? (request.namespace ?? 'default') : undefined;
  const object = await readObject(client, resource, request.name, namespace);
  const services = await connectServices(request, client);
  try {
    const stateIn =
      request.stateIn === 'annotations'
        ? 'annotations'
        : await stateLocation(client, resource, request.identity, logger);
    const owner = await ownerOfObject(client, request, object.metadata.uid ?? '');
    return explain({
      object,
      resource: scopeName(resource),
      handlers: handlersOn(resource, services, discovery),
      identity: request.identity,
      stateIn,
      ...(request.adoptKopf ? { adoptKopf: request.adoptKopf } : {}),
      events: await gatewayEvents(client, object),
      ...(request.ownNamespace ? { ownNamespace: request.ownNamespace } : {}),
      ...(owner ? { owner } : {}),
      now: new Date(),
    });
  } finally {
    await Promise.all(services.map((service) => service.close()));
  }
}

async function readObject(
  client: KubeClient,
  resource: DiscoveredResource,
  name: string,
  namespace: string | undefined,
): Promise<KubernetesObject> {
  try {
    return await client.get<KubernetesObject>(objectPath(resource, name, namespace));
  } catch (error) {
    if (!isNotFound(error)) throw error;
    const where = namespace ? ` in namespace ${namespace}` : '';
    throw new Error(`${scopeName(resource)} "${name}" not found${where}`);
  }
}

/**
 * The handlers the gateway serves on `resource`: those naming it, or a category or `*` it is in, and
 * within their service's scope (a handler beyond it is not served at all).
 */
function handlersOn(
  resource: DiscoveredResource,
  services: readonly FunctionService[],
  discovery: Discovery,
): Candidate<string>[] {
  const key = resourceKey(resource);
  const names = (spec: FunctionService['manifest']['handlers'][number]) =>
    resourcesNamed(spec, discovery).some((each) => resourceKey(each) === key);
  return services.flatMap((service) =>
    service.manifest.handlers
      .filter((spec) => names(spec) && !outsideScope(service, spec, resource))
      .map((spec) => ({ service: service.name, spec })),
  );
}

/** The gateway's events about the object (it posts cluster-scoped objects' in `default`). */
async function gatewayEvents(client: KubeClient, object: KubernetesObject): Promise<ObjectEvent[]> {
  const namespace = object.metadata.namespace ?? 'default';
  const list = await client.get<{ items: Array<Record<string, unknown>> }>(
    `/api/v1/namespaces/${encodeURIComponent(namespace)}/events`,
    { fieldSelector: `involvedObject.uid=${object.metadata.uid}` },
  );
  return list.items.flatMap((event) => {
    const time = event.lastTimestamp ?? event.eventTime ?? event.firstTimestamp;
    if (event.reportingComponent !== EVENT_COMPONENT || typeof time !== 'string') return [];
    return [{ reason: String(event.reason), message: String(event.message), time }];
  });
}

/** Which replica handles the object, when gateways of this identity hold Leases (alive now) where they peer. */
async function ownerOfObject(
  client: KubeClient,
  request: ExplainRequest,
  uid: string,
): Promise<Explanation['owner'] | undefined> {
  const members = await listMembers(client, request.peeringNamespace, request.identity.annotationPrefix);
  const now = Date.now();
  const alive = members.filter((member) => aliveByWallClock(member, now));
  if (alive.length === 0) return undefined;
  const view = viewOf(alive);
  return {
    replica: ownerOf(view, uid)?.id ?? null,
    sharding: view.active.length > 0 && view.active.every((member) => member.sharding),
    members: view.members.filter((member) => !member.freeze).map((member) => member.id),
  };
}
