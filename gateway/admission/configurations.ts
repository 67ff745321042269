/**
 * The Validating- and MutatingWebhookConfigurations, kept in step with the webhooks served: both
 * written at once, by server-side apply as the gateway's field manager, or removed when empty. At a
 * graceful stop all but the persistent webhooks go, unless other replicas run, whose webhooks they are too.
 */
import { type Webhook, webhookConfiguration, withoutNamespace } from '../../webhooks/configurations.ts';
import type { Way } from '../../webhooks/reach.ts';
import { isNotFound } from '../kube/errors.ts';
import type { Role } from '../manager/role.ts';
import type { AdmissionOptions } from './admission.ts';

const KINDS = ['validating', 'mutating'] as const;

type ConfigurationOptions = Pick<
  AdmissionOptions,
  'client' | 'identity' | 'namespaces' | 'ownNamespace' | 'logger'
>;

export class Configurations {
  readonly #options: ConfigurationOptions;

  constructor(options: ConfigurationOptions) {
    this.#options = options;
  }

  /**
   * Writes both configurations as `webhooks`, reached by `way`; `bundle` is what the apiserver is to
   * trust, when the way carries it.
   */
  async write(webhooks: readonly Webhook[], way: Way, bundle: string): Promise<void> {
    const { client, identity, namespaces, ownNamespace } = this.#options;
    for (const type of KINDS) {
      const built = webhookConfiguration(
        type,
        identity.annotationPrefix,
        webhooks,
        way.clientConfig,
        way.bundle ? bundle : undefined,
        namespaces,
      );
      const configuration = ownNamespace ? withoutNamespace(built, ownNamespace) : built;
      const path = `/apis/admissionregistration.k8s.io/v1/${type}webhookconfigurations/${identity.annotationPrefix}`;
      if ((configuration.webhooks as unknown[]).length === 0) {
        try {
          await client.request(path, { method: 'DELETE' });
        } catch (error) {
          if (!isNotFound(error)) throw error;
        }
      } else {
        await client.patch(path, 'apply', configuration, {
          fieldManager: identity.fieldManager,
          force: true,
        });
      }
    }
  }

  /**
   * Whether this is the last replica to stop, so that its webhooks (those not persistent) go with it.
   * When that cannot be known, they stay: a review refused for a missing gateway is safer than one let
   * through unchecked while others still serve. Alone (ALONE), it is.
   */
  async lastToStop(role: Role): Promise<boolean> {
    const { logger } = this.#options;
    try {
      if (!(await role.othersRunning())) return true;
      logger.info('other replicas run: their webhook configurations stay');
    } catch (error) {
      logger.warning('the webhook configurations stay: whether other replicas run is not known', {
        err: error,
      });
    }
    return false;
  }
}
