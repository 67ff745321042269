/**
 * The gateway's signing keys, kept in a Secret (private, read by the gateway only) and published in
 * a ConfigMap of the same name (`jwks.json`: the public keys, which function services mount or are
 * given). Rotated by dispatch/keys.ts's plan, looked at again every `refreshMs` and whenever the plan
 * says something is due, so replicas and restarts agree on one key set: the Secret is written with
 * its resourceVersion, and a replica that loses the race takes the winner's keys.
 */

import {
  type KeyPlan,
  parseStoredKeys,
  planKeys,
  publicKeys,
  type StoredKey,
  signingKeyOf,
} from '../dispatch/keys.ts';
import type { SigningKey } from '../dispatch/signer.ts';
import type { KubeClient } from '../kube/client.ts';
import { ApiError, ignoreNotFound } from '../kube/errors.ts';
import { MANAGED_BY_CAUSEWAY, secretPath, writeSecret } from '../kube/secrets.ts';
import type { Logger } from '../logging.ts';
import type { Part } from '../manager/manager.ts';
import type { Settings } from '../settings.ts';

/** The Secret's key holding the private keys, and the ConfigMap's key holding the public ones. */
export const PRIVATE_KEYS_FILE = 'keys.json';
export const PUBLIC_KEYS_FILE = 'jwks.json';

/** The keys in the gateway's Secret, with the version read; undefined when there is no such Secret yet. */
export async function readStoredKeys(
  client: KubeClient,
  { namespace, name }: { namespace: string; name: string },
): Promise<Kept<StoredKey[]> | undefined> {
  const where = `Secret ${namespace}/${name}`;
  const read = await ignoreNotFound(
    client.get<{ data?: Record<string, string>; metadata: { resourceVersion: string } }>(
      secretPath({ namespace, name }),
    ),
  );
  if (!read) return undefined;
  const text = read.data?.[PRIVATE_KEYS_FILE];
  if (text === undefined)
    throw new Error(`${where} has no key "${PRIVATE_KEYS_FILE}": it is not a gateway's signing keys`);
  return {
    value: parseStoredKeys(Buffer.from(text, 'base64').toString(), where),
    resourceVersion: read.metadata.resourceVersion,
  };
}

export interface SigningKeysOptions {
  client: KubeClient;
  location: { namespace: string; name: string };
  settings: Settings['signing'];
  logger: Logger;
}

interface Kept<T> {
  value: T;
  resourceVersion?: string;
}

export class SigningKeys implements Part {
  readonly name = 'signing keys';
  readonly placement = 'every replica'; // every replica signs
  readonly #options: SigningKeysOptions;
  #current: { stored: StoredKey; key: SigningKey } | undefined;
  #timer: NodeJS.Timeout | undefined;
  #stopped = false;

  constructor(options: SigningKeysOptions) {
    this.#options = options;
  }

  /** The key to sign with now: the newest that every service has had time to see. */
  current(): SigningKey {
    if (!this.#current) throw new Error('the signing keys are not loaded yet');
    return this.#current.key;
  }

  /** Loads (or makes and publishes) the keys: calls can be signed once this resolves. */
  async start(): Promise<void> {
    const plan = await this.#keep();
    this.#schedule(plan.next);
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
  }

  #schedule(next: number): void {
    if (this.#stopped) return;
    const delay = Math.min(Math.max(next - Date.now(), 0), this.#options.settings.refreshMs);
    this.#timer = setTimeout(() => void this.#tick(), delay);
    this.#timer.unref();
  }

  async #tick(): Promise<void> {
    let next = Date.now() + this.#options.settings.refreshMs;
    try {
      next = (await this.#keep()).next;
    } catch (error) {
      // The key in use stays valid for its whole overlap: a failed look costs nothing yet.
      this.#options.logger.warning('managing the signing keys failed, trying again', { err: error });
    }
    this.#schedule(next);
  }

  /** Reads the keys, writes what the plan changes (the Secret first, then its public half), takes the signing key. */
  async #keep(): Promise<KeyPlan> {
    const { location, settings, logger } = this.#options;
    for (let attempt = 0; ; attempt++) {
      const stored = await readStoredKeys(this.#options.client, location);
      const plan = planKeys(stored?.value ?? [], Date.now(), settings);
      if (plan.changed) {
        try {
          await this.#writeSecret(plan.keys, stored?.resourceVersion);
        } catch (error) {
          const lostRace = error instanceof ApiError && error.status === 409;
          if (lostRace && attempt < 3) continue; // another replica wrote first: take its keys
          throw error;
        }
        const kids = plan.keys.map((key) => key.kid).join(', ');
        logger.info(`signing keys in Secret ${location.namespace}/${location.name}: ${kids}`);
      }
      await this.#publish(plan.keys);
      if (this.#current?.stored.kid !== plan.signing.kid) {
        this.#current = { stored: plan.signing, key: signingKeyOf(plan.signing) };
        logger.info(`signing calls to function services with key ${plan.signing.kid}`);
      }
      return plan;
    }
  }

  get #configMapPath(): string {
    const { namespace, name } = this.#options.location;
    return `/api/v1/namespaces/${namespace}/configmaps/${name}`;
  }

  /** Creates the Secret, or replaces the version read: a 409 means another replica wrote first. */
  #writeSecret(keys: StoredKey[], resourceVersion: string | undefined): Promise<void> {
    const { client, location } = this.#options;
    const files = { [PRIVATE_KEYS_FILE]: JSON.stringify(keys) };
    return writeSecret(client, location, { type: 'Opaque', files }, resourceVersion);
  }

  /** Writes the public keys when the ConfigMap does not hold exactly them. */
  async #publish(keys: StoredKey[]): Promise<void> {
    const { client, location } = this.#options;
    const text = `${JSON.stringify(publicKeys(keys), null, 2)}\n`;
    const read = await ignoreNotFound(
      client.get<{ data?: Record<string, string>; metadata: { resourceVersion: string } }>(
        this.#configMapPath,
      ),
    );
    if (read?.data?.[PUBLIC_KEYS_FILE] === text) return;
    const body = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: {
        ...location,
        labels: MANAGED_BY_CAUSEWAY,
        ...(read ? { resourceVersion: read.metadata.resourceVersion } : {}),
      },
      data: { [PUBLIC_KEYS_FILE]: text },
    };
    if (read) await client.request(this.#configMapPath, { method: 'PUT', body });
    else
      await client.request(`/api/v1/namespaces/${location.namespace}/configmaps`, { method: 'POST', body });
  }
}
