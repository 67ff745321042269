/**
 * The webhooks the gateway serves, and how a review is decided: by one signed call per review to the
 * function service that has the handler, through the gateway's one call path, or here, without a call,
 * for the gateway's own finalizer webhook. A service's patch comes back as the JSON patch the apiserver
 * applies.
 */
import type { DueHandler, HandlerSpec, KubernetesObject } from '../../protocol/index.ts';
import { type Webhook, webhookOf, webhookPath } from '../../webhooks/configurations.ts';
import { jsonPatchOf } from '../../webhooks/patch.ts';
import type { ReviewRequest, Verdict } from '../../webhooks/review.ts';
import { type CallSubject, callServices, idempotencyKey } from '../dispatch/calls.ts';
import type { FunctionService } from '../dispatch/function-service.ts';
import type { DiscoveredResource } from '../kube/discovery.ts';
import { objectMatches } from '../reactor/filters.ts';
import { hasFinalizer } from '../reactor/finalizers.ts';
import { diff } from '../state/diff.ts';
import type { AdmissionOptions } from './admission.ts';

interface Served {
  webhook: Webhook;
  /** Decides here, without a call: the gateway's own webhooks. */
  local?: (object: KubernetesObject) => Verdict;
  service?: FunctionService;
  /** One, or those of the handler's category served so far. */
  resources: DiscoveredResource[];
  /** Its service was replaced: dropped at the next sync unless served again. */
  retired?: boolean;
}

/** The gateway's own webhook: not a handler's, so its "service" is the gateway. */
export const OWN = 'causeway';

/** The apiserver gives up at the webhook's timeout: answer well before it. */
const DECISION_MARGIN_MS = 1000;

export class Reviews {
  readonly #options: Pick<AdmissionOptions, 'identity' | 'serves' | 'logger'>;
  /** By webhook path. */
  readonly #webhooks = new Map<string, Served>();

  constructor(options: Pick<AdmissionOptions, 'identity' | 'serves' | 'logger'>) {
    this.#options = options;
  }

  /**
   * Adds the admission handlers of a service for a resource (for one more resource, when a handler by
   * category has its webhook already: one rule more).
   */
  serve(service: FunctionService, handlers: readonly HandlerSpec[], resource: DiscoveredResource): void {
    for (const handler of handlers) {
      const key = webhookPath(service.name, handler.id);
      const before = this.#webhooks.get(key);
      const resources = [
        ...(before?.service === service && !before.retired ? before.resources : []).filter(
          (other) => other.plural !== resource.plural || other.group !== resource.group,
        ),
        resource,
      ];
      const webhook = webhookOf(service.name, handler, resources, this.#options.identity.annotationPrefix);
      this.#webhooks.set(key, { webhook, service, resources });
    }
  }

  /**
   * Retires the webhooks of a service's handlers: they keep answering until `dropRetired`, so that a
   * review in between is not let through unchecked, and those served again (`serve`) stay.
   */
  retire(service: FunctionService): void {
    for (const served of this.#webhooks.values()) if (served.service === service) served.retired = true;
  }

  dropRetired(): void {
    for (const [key, served] of this.#webhooks) if (served.retired) this.#webhooks.delete(key);
  }

  /**
   * Puts our finalizer on objects of `resource` as they are created, when `needs` says so (the reactor's
   * finalizer rule): the finalizer then costs no PATCH of its own. Ignored on failure: the reactor
   * adds the finalizer itself if the webhook could not.
   */
  holdAtCreation(resource: DiscoveredResource, needs: (object: KubernetesObject) => boolean): void {
    const { finalizer, annotationPrefix } = this.#options.identity;
    const handler: HandlerSpec = {
      id: `finalizer/${resource.plural}.${resource.group}`,
      kind: 'mutate',
      resource: { name: resource.plural, group: resource.group, version: resource.version },
      options: { operations: ['CREATE'], ignoreFailures: true, timeout: 5 },
    };
    const webhook = webhookOf(OWN, handler, resource, annotationPrefix);
    const local = (object: KubernetesObject): Verdict => {
      if (!needs(object) || hasFinalizer(object, finalizer)) return { allowed: true };
      const patch = object.metadata.finalizers
        ? [{ op: 'add' as const, path: '/metadata/finalizers/-', value: finalizer }]
        : [{ op: 'add' as const, path: '/metadata/finalizers', value: [finalizer] }];
      return { allowed: true, patch };
    };
    this.#webhooks.set(webhook.path, { webhook, local, resources: [resource] });
  }

  /** The webhooks served now, as the configurations name them. */
  webhooks(): Webhook[] {
    return [...this.#webhooks.values()].map(({ webhook }) => webhook);
  }

  /** How long the server waits for a decision at `path`: less than the apiserver does. */
  deadlineMs(path: string): number {
    return Math.max(
      500,
      (this.#webhooks.get(path)?.webhook.timeoutSeconds ?? 10) * 1000 - DECISION_MARGIN_MS,
    );
  }

  /**
   * A review's webhook as `/<service>/<handler id>`, readable where its path is made of DNS labels:
   * `other` for one not served (a label must stay bounded).
   */
  nameOf(path: string): string {
    const served = this.#webhooks.get(path);
    return served ? `/${served.webhook.service}/${served.webhook.handler.id}` : 'other';
  }

  async decide(review: ReviewRequest, path: string, signal: AbortSignal): Promise<Verdict> {
    const served = this.#webhooks.get(path);
    // A handler gone (its service redeployed without it) while the apiserver still has its webhook.
    if (!served) return { allowed: true };
    const { webhook, service } = served;
    // The one under review, of those the webhook has a rule for (a handler's by category has several).
    const resource =
      served.resources.find(
        (candidate) =>
          candidate.group === review.resource.group && candidate.plural === review.resource.resource,
      ) ?? (served.resources[0] as DiscoveredResource);
    const object = review.object ?? review.oldObject;
    if (served.local)
      return object && this.#options.serves(review.namespace) ? served.local(object) : { allowed: true };
    if (!service) throw new Error(`no function service for the webhook at ${path}`);
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
      idempotencyKey: idempotencyKey(review.uid, webhook.handler.id, service.name),
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
    const log = this.#options.logger.child({ webhook: webhook.type, handler: webhook.handler.id });
    const [answer] = await callServices([{ service, handlers: [due] }], subject, [0], log);
    if (signal.aborted) throw new Error('no decision before the deadline');
    if (answer?.gone?.includes(webhook.handler.id)) {
      // Redeployed without it, as its webhook is about to be: answered as once the webhook is gone.
      log.info(
        `admission handler ${webhook.handler.id} is gone from "${service.name}": the review is let through, and its webhook goes`,
      );
      return { allowed: true };
    }
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
        const why =
          outcome?.message ??
          (answer?.down ? 'the service is down (no calls until its health check passes)' : 'no outcome');
        const message = `admission handler ${webhook.handler.id} of "${service.name}" could not decide: ${why}`;
        log.error(message);
        if (webhook.handler.options?.ignoreFailures)
          return { allowed: true, warnings: [...warnings, message] };
        return { allowed: false, status: { message, code: 500 }, warnings };
      }
    }
  }
}
