/**
 * The Validating- and MutatingWebhookConfigurations, kept in step with the webhooks served: both
 * written at once, by server-side apply as the gateway's field manager, or removed when empty. At a
 * graceful stop all but the persistent webhooks go, unless other replicas run, whose webhooks they are too.
 *
 * Every service's webhooks share the two configurations, and the apiserver takes or refuses each
 * configuration whole: one service's webhook it refuses would refuse every service's. So a write the
 * apiserver refuses is looked into: each service's webhooks are written alone with `dryRun=All`, and
 * those it refuses are left out of both configurations (their service is refused, with the reason),
 * the others written. So are the webhooks of the service that takes the most of a configuration too
 * large for the apiserver's store, which would fail with a 500 that no dry run foresees.
 *
 * Not a configuration per service: their names would follow the services (which FunctionServices add
 * and remove at run time), so the gateway would need to patch, delete and list webhook configurations
 * of any name, rights over every admission webhook of the cluster, where its RBAC names its own two
 * (`resourceNames`). The shared ones cost a look only when a write is refused.
 */
import { type Webhook, webhookConfiguration, withoutNamespace } from '../../webhooks/configurations.ts';
import type { Way } from '../../webhooks/reach.ts';
import { ApiError, isNotFound } from '../kube/errors.ts';
import type { Role } from '../manager/role.ts';
import type { AdmissionOptions } from './admission.ts';

const KINDS = ['validating', 'mutating'] as const;

/**
 * The most bytes (as JSON) a configuration is written with. The apiserver's store takes an object of
 * 1.5 MiB at most by default (etcd's --max-request-bytes), managedFields included, and answers a larger
 * one with a 500 that a dry run does not foresee: 700 webhooks with their caBundle, 1.3 MB, were
 * stored; 1,400, 2.7 MB, refused. Over it, the services with the most bytes of webhooks are left out.
 */
export const MAX_CONFIGURATION_BYTES = 1024 * 1024;

type ConfigurationOptions = Pick<
  AdmissionOptions,
  'client' | 'identity' | 'namespaces' | 'ownNamespace' | 'logger'
>;

/**
 * What the apiserver said of a configuration it found invalid (400, 413, 422), as opposed to an outage
 * or the gateway's own rights (403), which no service's webhooks left out would mend.
 */
function invalid(error: unknown): ApiError | undefined {
  return error instanceof ApiError && [400, 413, 422].includes(error.status) ? error : undefined;
}

/** The services with webhooks of `type` among `webhooks`, the gateway's own (`own`) aside. */
function servicesOf(type: Webhook['type'], webhooks: readonly Webhook[], own: string): Set<string> {
  return new Set(
    webhooks.filter((webhook) => webhook.type === type && webhook.service !== own).map((w) => w.service),
  );
}

export class Configurations {
  readonly #options: ConfigurationOptions;

  constructor(options: ConfigurationOptions) {
    this.#options = options;
  }

  /**
   * Writes both configurations as `webhooks`, reached by `way`; `bundle` is what the apiserver is to
   * trust, when the way carries it. Returns the services whose webhooks the apiserver refused (or
   * would: too large), with why: those are left out, and the others written. `own`: the service name
   * of the gateway's own webhooks, never left out (a refusal of those is thrown, as any other failure).
   */
  async write(
    webhooks: readonly Webhook[],
    way: Way,
    bundle: string,
    own: string,
  ): Promise<Map<string, string>> {
    const refused = new Map<string, string>();
    for (;;) {
      const kept = webhooks.filter((webhook) => !refused.has(webhook.service));
      const oversized = this.#largestOverSize(kept, way, bundle, own);
      if (oversized) {
        refused.set(oversized.service, oversized.why);
        continue;
      }
      let type: Webhook['type'] | undefined;
      try {
        for (type of KINDS) await this.#writeOne(type, kept, way, bundle);
        return refused;
      } catch (error) {
        if (!invalid(error) || !type) throw error;
        const found = await this.#refusedServices(type, kept, way, bundle, own);
        if (found.size === 0) throw error; // not one service's webhooks: the gateway's own, or its rights
        for (const [service, why] of found) refused.set(service, why);
      }
    }
  }

  /**
   * Where a configuration would be larger than the apiserver stores (MAX_CONFIGURATION_BYTES): the
   * service (the gateway's own aside) whose webhooks take the most of it, and why it is left out.
   */
  #largestOverSize(
    webhooks: readonly Webhook[],
    way: Way,
    bundle: string,
    own: string,
  ): { service: string; why: string } | undefined {
    for (const type of KINDS) {
      const bytes = this.#bytes(type, webhooks, way, bundle);
      if (bytes <= MAX_CONFIGURATION_BYTES) continue;
      let largest: { service: string; bytes: number } | undefined;
      for (const service of servicesOf(type, webhooks, own)) {
        const alone = this.#bytes(
          type,
          webhooks.filter((webhook) => webhook.service === service),
          way,
          bundle,
        );
        if (!largest || alone > largest.bytes) largest = { service, bytes: alone };
      }
      if (!largest) return undefined; // the gateway's own alone: written, and the apiserver says
      const why =
        `its ${type} webhooks take ${largest.bytes} bytes of the configuration every service shares, which ` +
        `would be ${bytes} bytes, more than the ${MAX_CONFIGURATION_BYTES} the gateway writes (the apiserver's store takes 1.5 MiB)`;
      this.#leftOut(largest.service, why);
      return { service: largest.service, why };
    }
    return undefined;
  }

  #bytes(type: Webhook['type'], webhooks: readonly Webhook[], way: Way, bundle: string): number {
    return Buffer.byteLength(JSON.stringify(this.#configuration(type, webhooks, way, bundle)));
  }

  #configuration(
    type: Webhook['type'],
    webhooks: readonly Webhook[],
    way: Way,
    bundle: string,
  ): Record<string, unknown> {
    const { identity, namespaces, ownNamespace } = this.#options;
    const built = webhookConfiguration(
      type,
      identity.annotationPrefix,
      webhooks,
      way.clientConfig,
      way.bundle ? bundle : undefined,
      namespaces,
    );
    return ownNamespace ? withoutNamespace(built, ownNamespace) : built;
  }

  /** Writes the configuration of `type` as the webhooks of that type among `webhooks`; `dryRun`: only checked. */
  async #writeOne(
    type: Webhook['type'],
    webhooks: readonly Webhook[],
    way: Way,
    bundle: string,
    dryRun = false,
  ): Promise<void> {
    const { client, identity } = this.#options;
    const configuration = this.#configuration(type, webhooks, way, bundle);
    const path = `/apis/admissionregistration.k8s.io/v1/${type}webhookconfigurations/${identity.annotationPrefix}`;
    if ((configuration.webhooks as unknown[]).length === 0) {
      if (dryRun) return;
      try {
        await client.request(path, { method: 'DELETE' });
      } catch (error) {
        if (!isNotFound(error)) throw error;
      }
    } else {
      await client.patch(path, 'apply', configuration, {
        fieldManager: identity.fieldManager,
        force: true,
        ...(dryRun ? { dryRun: 'All' } : {}),
      });
    }
  }

  /**
   * The services among `webhooks` (the gateway's own aside) whose webhooks of `type` the apiserver
   * refuses alone, as a configuration of them only written with `dryRun=All`, with what it said.
   */
  async #refusedServices(
    type: Webhook['type'],
    webhooks: readonly Webhook[],
    way: Way,
    bundle: string,
    own: string,
  ): Promise<Map<string, string>> {
    const refused = new Map<string, string>();
    for (const service of servicesOf(type, webhooks, own)) {
      const alone = webhooks.filter((webhook) => webhook.service === service);
      try {
        await this.#writeOne(type, alone, way, bundle, true);
      } catch (error) {
        const said = invalid(error);
        if (!said) throw error;
        const why = `the apiserver refuses its ${type} webhooks: ${said.message}`;
        this.#leftOut(service, why);
        refused.set(service, why);
      }
    }
    return refused;
  }

  #leftOut(service: string, why: string): void {
    this.#options.logger.error(
      `the admission webhooks of function service "${service}" are not configured: ${why}`,
    );
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
