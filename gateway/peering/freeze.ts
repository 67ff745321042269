/**
 * `causeway freeze` and `causeway resume`: pause every gateway of an identity by hand (an upgrade of
 * the CRD, a migration), as Kopf's `kopf freeze` does. A freeze is a member Lease that never leads and
 * outranks every priority: the gateways stop their pipelines and say so in their Leases, which
 * `freeze` waits for. It lasts its lifetime, or until `resume` removes it.
 */
import type { KubeClient } from '../kube/client.ts';
import { isNotFound } from '../kube/errors.ts';
import { LEASES, listMembers, writeLease } from './leases.ts';
import { aliveByWallClock, memberKeys } from './members.ts';
import { freezeLeaseName } from './peering.ts';

/** A Lease's duration for a freeze with no lifetime: the longest a Lease takes (some 68 years). */
const FOREVER_S = 2 ** 31 - 1;

export interface FreezeOptions {
  client: KubeClient;
  namespace: string;
  /** The gateways' annotation prefix: their identity. */
  prefix: string;
  /** Seconds it lasts; undefined: until resumed. */
  lifetimeS?: number;
  message: string;
  /** Who freezes, for the Lease's holder: `user@host`. */
  holder: string;
  /** How long to wait for the gateways to pause. */
  waitS: number;
}

export interface Frozen {
  /** The live gateways, all paused. */
  paused: string[];
  /** Those still leading when the wait ended: their calls in flight may still be finishing. */
  leading: string[];
}

export async function freeze(options: FreezeOptions): Promise<Frozen> {
  const { client, namespace, prefix } = options;
  const keys = memberKeys(prefix);
  const now = new Date();
  const name = freezeLeaseName(prefix);
  const body = {
    apiVersion: 'coordination.k8s.io/v1',
    kind: 'Lease',
    metadata: {
      name,
      labels: { [keys.peering]: 'member' },
      annotations: { [keys.freeze]: options.message, [keys.since]: now.toISOString() },
    },
    spec: {
      // What `kubectl get lease` shows as the holder: who froze, and why.
      holderIdentity: `frozen by ${options.holder}${options.message ? `: ${options.message}` : ''}`.slice(
        0,
        253,
      ),
      leaseDurationSeconds: options.lifetimeS ?? FOREVER_S,
      renewTime: now.toISOString().replace('Z', '000Z'),
    },
  };
  await writeLease(client, namespace, body, undefined);
  const deadline = Date.now() + options.waitS * 1000;
  for (;;) {
    const gateways = (await listMembers(client, namespace, prefix)).filter(
      (member) => !member.freeze && aliveByWallClock(member, Date.now()),
    );
    const leading = gateways.filter((member) => member.leading).map((member) => member.id);
    if (leading.length === 0 || Date.now() >= deadline) {
      return { paused: gateways.filter((member) => !member.leading).map((member) => member.id), leading };
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

/** Removes the freeze; false when there was none. */
export async function resume(options: {
  client: KubeClient;
  namespace: string;
  prefix: string;
}): Promise<boolean> {
  try {
    await options.client.request(`${LEASES(options.namespace)}/${freezeLeaseName(options.prefix)}`, {
      method: 'DELETE',
    });
    return true;
  } catch (error) {
    if (isNotFound(error)) return false;
    throw error;
  }
}
