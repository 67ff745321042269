/**
 * The RBAC a gateway needs, from what its flags say of it and what its services serve: one
 * computation for `causeway rbac`, which prints it, and for the gateway, which checks at start that
 * it is granted (at-start.ts).
 */
import type { KubernetesObject } from '../../protocol/index.ts';
import type { FunctionService } from '../dispatch/function-service.ts';
import type { KubeClient } from '../kube/client.ts';
import type { Discovery } from '../kube/discovery.ts';
import type { Logger } from '../logging.ts';
import { functionServicesPath } from '../services/function-service-objects.ts';
import { type RbacObject, type RbacRequest, rbacFor } from './rbac.ts';
import { functionServiceSecrets, servedBy } from './served.ts';

/** What of the gateway's flags its rules follow. */
export interface GatewayRbacFlags {
  /** All of the request but what the services serve (served.ts). */
  request: Omit<RbacRequest, 'watched' | 'children' | 'admission'>;
  /** The admission part of the request, for a gateway that serves admission handlers. */
  admission: NonNullable<RbacRequest['admission']>;
  /**
   * --impersonate: the namespace of the accounts of services with no FunctionService of their own
   * (the gateway's). The services are then connected with it, and written as their accounts.
   */
  impersonate?: string;
}

/**
 * The ServiceAccount, Roles, ClusterRole and bindings of a gateway with these flags serving
 * `services`; and the handlers that name a resource the cluster does not serve, which get no rule.
 */
export async function gatewayRbac(
  client: KubeClient,
  { request, admission, impersonate }: GatewayRbacFlags,
  services: readonly FunctionService[],
  discovery: Discovery,
  logger: Logger,
): Promise<{ objects: RbacObject[]; unserved: string[] }> {
  const served = servedBy(services, discovery);
  const notImpersonated = services.filter((service) => !service.account).map((service) => service.name);
  if (impersonate !== undefined && notImpersonated.length > 0)
    throw new Error(
      `${notImpersonated.join(', ')}: connected without --impersonate, their accounts are not known`,
    );
  for (const name of served.unscoped) {
    logger.warning(`"${name}" declares no scope and is pinned none: no rule lets its answers apply children`);
  }
  const objects = rbacFor({
    ...request,
    ...(await withFunctionServiceSecrets(client, request)),
    watched: served.watched,
    // Under --impersonate, the services' accounts read and apply the children: the gateway needs no rule for them.
    ...(impersonate === undefined
      ? { children: served.children }
      : { children: [], impersonated: served.impersonated }),
    ...(served.admission ? { admission } : {}),
  });
  return { objects, unserved: served.unserved };
}

/** The Secrets the FunctionService objects served name, added to the request's. */
async function withFunctionServiceSecrets(
  client: KubeClient,
  request: Pick<RbacRequest, 'functionServices' | 'functionTls'>,
): Promise<Pick<RbacRequest, 'functionTls' | 'readSecrets'>> {
  if (request.functionServices === undefined) return { functionTls: request.functionTls };
  const listed = await client.get<{ items: KubernetesObject[] }>(
    functionServicesPath(request.functionServices),
  );
  const { certificates, read } = functionServiceSecrets(listed.items);
  return { functionTls: [...request.functionTls, ...certificates], readSecrets: read };
}
