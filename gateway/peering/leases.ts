/** The Leases of peering, read and written the one way every part of it (gateways, `causeway freeze`) does. */
import type { KubernetesObject } from '../../protocol/index.ts';
import type { KubeClient } from '../kube/client.ts';
import { ApiError, isNotFound } from '../kube/errors.ts';
import { MAX_MEMBERS, type Member, memberKeys, memberOf } from './members.ts';

export const LEASES = (namespace: string) => `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases`;

/**
 * The members' Leases of an identity in a namespace, the first MAX_MEMBERS by name (a namespace
 * flooded with Leases does not flood the gateway); the others, and malformed ones, are left out.
 */
export async function listMembers(client: KubeClient, namespace: string, prefix: string): Promise<Member[]> {
  const list = await client.get<{ items?: KubernetesObject[] }>(LEASES(namespace), {
    labelSelector: memberKeys(prefix).peering,
    limit: MAX_MEMBERS,
  });
  return (list.items ?? []).flatMap((lease) => memberOf(lease, prefix) ?? []);
}

/**
 * Writes `lease` over the version `known` (created when none is known) and returns its new version.
 * When that version is not there any more (another writer, or the Lease gone), over the one there is.
 */
export async function writeLease(
  client: KubeClient,
  namespace: string,
  lease: { metadata: { name: string } & Record<string, unknown> } & Record<string, unknown>,
  known: string | undefined,
  signal?: AbortSignal,
): Promise<string | undefined> {
  const path = `${LEASES(namespace)}/${lease.metadata.name}`;
  const put = async (resourceVersion: string | undefined) => {
    const written = resourceVersion
      ? await client.request<KubernetesObject>(path, {
          method: 'PUT',
          body: { ...lease, metadata: { ...lease.metadata, resourceVersion } },
          ...(signal ? { signal } : {}),
        })
      : await client.request<KubernetesObject>(LEASES(namespace), {
          method: 'POST',
          body: lease,
          ...(signal ? { signal } : {}),
        });
    return written.metadata.resourceVersion;
  };
  try {
    return await put(known);
  } catch (error) {
    if (!(error instanceof ApiError && (error.status === 409 || error.status === 404))) throw error;
    let current: string | undefined;
    try {
      current = (await client.request<KubernetesObject>(path, signal ? { signal } : {})).metadata
        .resourceVersion;
    } catch (missing) {
      if (!isNotFound(missing)) throw missing;
    }
    return put(current);
  }
}
