/**
 * Admission, as an engine of the gateway: the webhook server of webhooks/ answers the apiserver, and
 * this engine decides through the gateway's one call path (one signed call per review to the function
 * service that has the handler), keeps the certificates, and keeps the webhook configurations in step
 * with the handlers served; on a graceful stop it removes all but the persistent webhooks.
 */
import type { DueHandler, HandlerSpec } from '../../protocol/index.ts';
import { type Certificates, caBundle, renewalDue, renewCertificates } from '../../webhooks/certificates.ts';
import {
  type ClientConfig,
  type Webhook,
  webhookConfiguration,
  webhookOf,
} from '../../webhooks/configurations.ts';
import { jsonPatchOf } from '../../webhooks/patch.ts';
import type { ReviewRequest, Verdict } from '../../webhooks/review.ts';
import { startWebhookServer, type WebhookServer } from '../../webhooks/server.ts';
import type { Component } from '../components.ts';
import { type CallSubject, callServices, idempotencyKey } from '../dispatch/calls.ts';
import type { FunctionService } from '../dispatch/function-service.ts';
import type { Identity } from '../identity.ts';
import type { KubeClient } from '../kube/client.ts';
import type { DiscoveredResource } from '../kube/discovery.ts';
import { isNotFound } from '../kube/errors.ts';
import type { Logger } from '../logging.ts';
import { objectMatches } from '../reactor/filters.ts';
import type { Settings } from '../settings.ts';
import { diff } from '../state/diff.ts';

export interface AdmissionOptions {
  client: KubeClient;
  identity: Identity;
  settings: Settings['admission'];
  /** The namespaces served, when the gateway serves named ones only. */
  namespaces: readonly string[] | undefined;
  /** Whether the gateway serves a namespace (it may serve patterns, which no selector can say). */
  serves(namespace: string | undefined): boolean;
  logger: Logger;
}

interface Served {
  webhook: Webhook;
  service: FunctionService;
  resource: DiscoveredResource;
}

/** The apiserver gives up at the webhook's timeout: answer well before it. */
const DECISION_MARGIN_MS = 1000;
const KINDS = ['validating', 'mutating'] as const;

export class Admission implements Component {
  readonly name = 'admission webhooks';
  readonly leaderOnly = false; // every replica answers reviews
  readonly #options: AdmissionOptions;
  readonly #webhooks = new Map<string, Served>();
  #server: WebhookServer | undefined;
  #certificates: Certificates | undefined;
  #renewal: NodeJS.Timeout | undefined;

  constructor(options: AdmissionOptions) {
    this.#options = options;
  }

  /** Adds the admission handlers of a service for a resource; configured at start, or at once if started. */
  async serve(service: FunctionService, handlers: readonly HandlerSpec[], resource: DiscoveredResource) {
    for (const handler of handlers) {
      const webhook = webhookOf(service.name, handler, resource, this.#options.identity.annotationPrefix);
      this.#webhooks.set(webhook.path, { webhook, service, resource });
    }
    if (this.#server) await this.#configure();
  }

  get size(): number {
    return this.#webhooks.size;
  }

  async start(): Promise<void> {
    const { settings, logger } = this.#options;
    this.#certificates = await this.#renewCertificates();
    this.#server = await startWebhookServer({
      host: settings.listen.host,
      port: settings.listen.port,
      key: this.#certificates.key,
      cert: this.#certificates.cert,
      decide: (review, path, signal) => this.#decide(review, path, signal),
      deadlineMs: (path) =>
        Math.max(500, (this.#webhooks.get(path)?.webhook.timeoutSeconds ?? 10) * 1000 - DECISION_MARGIN_MS),
      logger,
    });
    logger.info(`admission webhooks served at ${this.#server.url}`);
    await this.#configure();
    this.#scheduleRenewal();
  }

  async stop(): Promise<void> {
    clearTimeout(this.#renewal);
    if (!this.#server) return;
    await this.#configure({ persistentOnly: true });
    await this.#server.close();
    this.#server = undefined;
  }

  async #decide(review: ReviewRequest, path: string, signal: AbortSignal): Promise<Verdict> {
    const served = this.#webhooks.get(path);
    if (!served) throw new Error(`no webhook at ${path}`);
    const { webhook, service, resource } = served;
    const object = review.object ?? review.oldObject;
    // What the apiserver could not filter (annotations, fields, namespace patterns) is filtered here.
    if (
      !object ||
      !this.#options.serves(review.namespace) ||
      !objectMatches(object, webhook.handler.filters)
    ) {
      return { allowed: true };
    }
    const update = review.operation === 'UPDATE' && review.oldObject && review.object;
    const due: DueHandler = {
      id: webhook.handler.id,
      retry: 0,
      started: new Date().toISOString(),
      idempotencyKey: idempotencyKey(review.uid, webhook.handler.id),
      ...(update
        ? { old: review.oldObject, new: review.object, diff: diff(review.oldObject, review.object) }
        : {}),
    };
    const subject: CallSubject = {
      reason: 'admission',
      resource,
      object,
      admission: {
        uid: review.uid,
        operation: review.operation,
        ...(review.subResource ? { subresource: review.subResource } : {}),
        dryRun: review.dryRun,
        userInfo: review.userInfo,
      },
      timeoutMs: webhook.timeoutSeconds * 1000 - DECISION_MARGIN_MS,
    };
    const log = this.#options.logger.child(`${webhook.type} ${webhook.handler.id}`);
    const [answer] = await callServices([{ service, handlers: [due] }], subject, [0], log);
    if (signal.aborted) throw new Error('no decision before the deadline');
    const outcome = answer?.outcomes[webhook.handler.id];
    const warnings = outcome?.warnings ?? [];
    switch (outcome?.status) {
      case 'success':
      case 'skipped': {
        const patch =
          webhook.type === 'mutating' && outcome.patch ? jsonPatchOf(object, [outcome.patch]) : [];
        return { allowed: true, warnings, ...(patch.length > 0 ? { patch } : {}) };
      }
      case 'denied':
        return { allowed: false, status: { message: outcome.message, code: outcome.code }, warnings };
      default: {
        // The service could not be asked or failed to answer: the handler's failure policy decides.
        const message = `admission handler ${webhook.handler.id} of "${service.name}" could not decide: ${outcome?.message ?? 'no outcome'}`;
        log.error(message);
        if (webhook.handler.options?.ignoreFailures)
          return { allowed: true, warnings: [...warnings, message] };
        return { allowed: false, status: { message, code: 500 }, warnings };
      }
    }
  }

  /** Writes both configurations (server-side apply, as the gateway's field manager), or removes them. */
  async #configure({ persistentOnly = false } = {}): Promise<void> {
    const { client, identity, settings, namespaces } = this.#options;
    if (!this.#server || !this.#certificates) return;
    const webhooks = [...this.#webhooks.values()]
      .map(({ webhook }) => webhook)
      .filter((webhook) => !persistentOnly || webhook.persistent);
    const clientConfig: ClientConfig =
      settings.reach === 'service' && settings.service
        ? { service: settings.service }
        : { url: this.#server.url };
    for (const type of KINDS) {
      const configuration = webhookConfiguration(
        type,
        identity.annotationPrefix,
        webhooks,
        clientConfig,
        caBundle(this.#certificates),
        namespaces,
      );
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

  /** The certificates as kept, renewed when due (hosts the server must name, or their end near). */
  async #renewCertificates(): Promise<Certificates> {
    const hosts = this.#hosts();
    const { certificates, changed } = await renewCertificates(this.#certificates, hosts);
    if (changed) this.#options.logger.info(`admission webhook certificate made for ${hosts.join(', ')}`);
    return certificates;
  }

  #hosts(): string[] {
    const { settings } = this.#options;
    if (settings.reach === 'service' && settings.service) {
      const { name, namespace } = settings.service;
      return [
        name,
        `${name}.${namespace}`,
        `${name}.${namespace}.svc`,
        `${name}.${namespace}.svc.cluster.local`,
      ];
    }
    return [settings.listen.host === '0.0.0.0' ? '127.0.0.1' : settings.listen.host, 'localhost'];
  }

  /** Renews the serving certificate ahead of its end: the CA stays, so the bundle and the apiserver's trust do too. */
  #scheduleRenewal(): void {
    if (!this.#certificates) return;
    const inMs = Math.max(60_000, renewalDue(this.#certificates).getTime() - Date.now());
    this.#renewal = setTimeout(
      async () => {
        try {
          const renewed = await this.#renewCertificates();
          if (renewed !== this.#certificates) {
            this.#certificates = renewed;
            await this.#configure(); // the bundle first (a next CA), then the certificate it vouches for
            this.#server?.setCertificate(renewed.key, renewed.cert);
          }
        } catch (error) {
          this.#options.logger.error(`renewing the webhook certificate failed: ${(error as Error).message}`);
        }
        this.#scheduleRenewal();
      },
      Math.min(inMs, 2 ** 31 - 1),
    );
    this.#renewal.unref();
  }
}
