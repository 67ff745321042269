/**
 * `causeway explain`'s reading: the object through discovery as the gateway resolves it, the handlers
 * from where the gateway gets them (an operator module in this process, services over HTTP, or the
 * FunctionService objects of a namespace), the gateway's events about the object, and its peering
 * Leases; then explain.ts judges.
 */
import type { KubernetesObject } from '../../protocol/index.ts';
import { outsideScope, resourceKey } from '../binding.ts';
import { FunctionService } from '../dispatch/function-service.ts';
import { scopeName } from '../dispatch/scope.ts';
import type { FunctionEndpoint } from '../dispatch/services.ts';
import { hmacSigner, type Signer } from '../dispatch/signer.ts';
import { type FetchHandler, httpTransport, inProcessTransport } from '../dispatch/transport.ts';
import { functionServiceEndpoint, functionServicesPath } from '../engines/function-service-objects.ts';
import type { Identity } from '../identity.ts';
import type { KubeClient } from '../kube/client.ts';
import {
  type DiscoveredResource,
  type Discovery,
  objectPath,
  ResourceNotFound,
  selectsSeveral,
} from '../kube/discovery.ts';
import { isNotFound } from '../kube/errors.ts';
import { EVENT_COMPONENT } from '../kube/events.ts';
import type { Logger } from '../logging.ts';
import { listMembers } from '../peering/leases.ts';
import { aliveByWallClock, ownerOf, viewOf } from '../peering/members.ts';
import { stateLocation } from '../pipeline.ts';
import type { Candidate } from '../reactor/model.ts';
import { explain, type ObjectEvent } from './explain.ts';
import type { Explanation } from './explanation.ts';

/** Where the handlers come from, as the gateway is given them; one or more. */
export interface HandlerSources {
  /** An operator module, loaded as `causeway run` loads it. */
  module?: FetchHandler;
  /** Services over HTTP (`--functions`). */
  functions: readonly FunctionEndpoint[];
  /** The namespace of FunctionService objects (`--function-services`). */
  functionServices?: string;
}

export interface ExplainRequest {
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
  sources: HandlerSources;
  /** Signs the manifest requests of services over HTTP that share no secret of their own; asked only then. */
  signer(): Promise<Signer>;
  /** The CA to trust for services over https that name none. */
  ca?: string;
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

/** No call is made: the manifest of a module in this process is read directly, unsigned. */
const NO_CALLS: Signer = () => {
  throw new Error('causeway explain makes no calls to a function service');
};

/** Every service the sources name, connected as the gateway connects: health, then the manifest. */
async function connectServices(request: ExplainRequest, client: KubeClient): Promise<FunctionService[]> {
  const { sources } = request;
  const endpoints = [...sources.functions];
  if (sources.functionServices !== undefined) {
    const listed = await client.get<{ items: KubernetesObject[] }>(
      functionServicesPath(sources.functionServices),
    );
    for (const object of listed.items) endpoints.push(await functionServiceEndpoint(client, object));
  }
  const services: FunctionService[] = [];
  try {
    if (sources.module) {
      services.push(
        await FunctionService.connect({
          transport: inProcessTransport(sources.module),
          name: undefined,
          sign: NO_CALLS,
          scope: 'declared',
        }),
      );
    }
    for (const endpoint of endpoints) services.push(await connectOverHttp(endpoint, request));
    return services;
  } catch (error) {
    await Promise.all(services.map((service) => service.close()));
    throw error;
  }
}

async function connectOverHttp(
  endpoint: FunctionEndpoint,
  request: ExplainRequest,
): Promise<FunctionService> {
  const transport = httpTransport(endpoint.url, endpoint.ca ?? request.ca, 1);
  try {
    return await FunctionService.connect({
      transport,
      name: endpoint.name,
      sign: endpoint.secret ? hmacSigner(endpoint.secret) : await request.signer(),
      ...(endpoint.scope ? { scope: endpoint.scope } : {}),
    });
  } catch (error) {
    await transport.close();
    const reason = error instanceof Error ? error.message : String(error);
    throw new Error(`cannot read the handlers of "${endpoint.name}" at ${endpoint.url}: ${reason}`, {
      cause: error,
    });
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
  const names = (spec: FunctionService['manifest']['handlers'][number]) => {
    try {
      const selected = selectsSeveral(spec.resource)
        ? discovery.select(spec.resource)
        : [discovery.resolve(spec.resource)];
      return selected.some((each) => resourceKey(each) === key);
    } catch (error) {
      if (error instanceof ResourceNotFound) return false;
      throw error;
    }
  };
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
