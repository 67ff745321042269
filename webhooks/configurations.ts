/**
 * The Validating- and MutatingWebhookConfiguration a gateway manages, built from the manifests: one
 * webhook per admission handler, with rules for its resources, its operations, an objectSelector from
 * its label filters, and the gateway's namespaces. Pure: the gateway writes what this builds.
 */
import { createHash } from 'node:crypto';
import type { AdmissionOperation, HandlerSpec, MetaMatch } from '../protocol/index.ts';

/** A resource an admission handler is for, as discovery resolved it. */
export interface WebhookResource {
  group: string;
  version: string;
  plural: string;
  namespaced: boolean;
}

export interface LabelSelector {
  matchExpressions: Array<{
    key: string;
    operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist';
    values?: string[];
  }>;
}

export interface Webhook {
  /** Unique in its configuration and fully qualified: `<handler>.<service>.<suffix>`. */
  name: string;
  /** Where the server serves it: `/<service>/<handler id>`. */
  path: string;
  type: 'validating' | 'mutating';
  service: string;
  handler: HandlerSpec;
  /** One, or those of a category the handler is for: a rule each. */
  resources: readonly WebhookResource[];
  persistent: boolean;
  timeoutSeconds: number;
}

/** How the apiserver reaches the server: a URL, or a Service in the cluster. */
export type ClientConfig = { url: string } | { service: { namespace: string; name: string; port: number } };

const DEFAULT_OPERATIONS: AdmissionOperation[] = ['CREATE', 'UPDATE', 'DELETE'];
export const DEFAULT_TIMEOUT_SECONDS = 10;

export function webhookOf(
  service: string,
  handler: HandlerSpec,
  resources: WebhookResource | readonly WebhookResource[],
  suffix: string,
): Webhook {
  return {
    name: `${dnsLabel(handler.id)}.${dnsLabel(service)}.${suffix}`,
    path: webhookPath(service, handler.id),
    type: handler.kind === 'mutate' ? 'mutating' : 'validating',
    service,
    handler,
    resources: [resources].flat(),
    persistent: handler.options?.persistent === true,
    timeoutSeconds: handler.options?.timeout ?? DEFAULT_TIMEOUT_SECONDS,
  };
}

/**
 * The webhook's path: DNS labels, as the apiserver requires of every segment of a Service's path
 * (`clientConfig.service.path`), so that a handler id such as `check_field` or `fn/spec.field` is
 * served through a Service as through a URL; the same path for both, and nothing to encode.
 */
export function webhookPath(service: string, handlerId: string): string {
  return `/${dnsLabel(service)}/${dnsLabel(handlerId)}`;
}

/**
 * The configuration objects of one kind (validating or mutating) for `webhooks`, named `name`.
 * `namespaces`: the names the gateway serves, when it serves named ones only.
 */
export function webhookConfiguration(
  type: Webhook['type'],
  name: string,
  webhooks: readonly Webhook[],
  client: ClientConfig,
  /** PEM of what the apiserver is to trust; absent where it trusts the endpoint already (a tunnel). */
  caBundle: string | undefined,
  namespaces: readonly string[] | undefined,
): Record<string, unknown> {
  const ca = caBundle === undefined ? {} : { caBundle: Buffer.from(caBundle).toString('base64') };
  return {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: type === 'mutating' ? 'MutatingWebhookConfiguration' : 'ValidatingWebhookConfiguration',
    metadata: { name, labels: { 'app.kubernetes.io/managed-by': 'causeway' } },
    webhooks: webhooks
      .filter((webhook) => webhook.type === type)
      .map((webhook) => {
        const { handler, resources } = webhook;
        const subresource = handler.options?.subresource;
        const objectSelector = labelSelector(handler.filters?.labels);
        return {
          name: webhook.name,
          clientConfig:
            'url' in client
              ? { url: `${client.url.replace(/\/+$/, '')}${webhook.path}`, ...ca }
              : { service: { ...client.service, path: webhook.path }, ...ca },
          rules: resources.map((resource) => ({
            apiGroups: [resource.group],
            apiVersions: [resource.version],
            resources: [subresource ? `${resource.plural}/${subresource}` : resource.plural],
            operations: handler.options?.operations ?? DEFAULT_OPERATIONS,
            scope: resource.namespaced ? 'Namespaced' : 'Cluster',
          })),
          ...(objectSelector ? { objectSelector } : {}),
          // The apiserver never skips other cluster-scoped objects for it (Namespaces match on their labels).
          ...(namespaces && resources.some((resource) => resource.namespaced)
            ? {
                namespaceSelector: {
                  matchExpressions: [
                    { key: 'kubernetes.io/metadata.name', operator: 'In', values: [...namespaces] },
                  ],
                },
              }
            : {}),
          sideEffects: handler.options?.sideEffects ? 'NoneOnDryRun' : 'None',
          failurePolicy: handler.options?.ignoreFailures ? 'Ignore' : 'Fail',
          timeoutSeconds: webhook.timeoutSeconds,
          matchPolicy: 'Equivalent',
          admissionReviewVersions: ['v1'],
          ...(type === 'mutating' ? { reinvocationPolicy: 'Never' } : {}),
        };
      }),
  };
}

/** Label filters the apiserver can check itself, so objects they exclude are never sent. */
function labelSelector(labels: Record<string, MetaMatch> | undefined): LabelSelector | undefined {
  const expressions = Object.entries(labels ?? {}).map(([key, match]) =>
    typeof match === 'string'
      ? { key, operator: 'In' as const, values: [match] }
      : { key, operator: 'present' in match ? ('Exists' as const) : ('DoesNotExist' as const) },
  );
  return expressions.length > 0 ? { matchExpressions: expressions } : undefined;
}

/** A handler id or service name as a DNS label; a hash keeps ids apart that differ only in other characters. */
function dnsLabel(text: string): string {
  const label = text
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 50);
  if (label === text) return label;
  return `${label || 'x'}-${createHash('sha256').update(text).digest('hex').slice(0, 8)}`;
}

/**
 * The configuration with `namespace` left out of every webhook that reviews namespaced objects (the
 * gateway's own, which it serves to no function service): the apiserver never sends a review of an
 * object there. Kept beside its namespaceSelector (named namespaces), by the name the apiserver labels
 * every namespace with.
 */
export function withoutNamespace(
  configuration: Record<string, unknown>,
  namespace: string,
): Record<string, unknown> {
  const webhooks = configuration.webhooks as ReadonlyArray<Record<string, unknown>>;
  return {
    ...configuration,
    webhooks: webhooks.map((webhook) => {
      const rules = webhook.rules as ReadonlyArray<{ scope?: string }>;
      if (!rules.some((rule) => rule.scope === 'Namespaced')) return webhook;
      const selector = webhook.namespaceSelector as LabelSelector | undefined;
      const expressions = selector?.matchExpressions ?? [];
      const excluded = {
        key: 'kubernetes.io/metadata.name',
        operator: 'NotIn' as const,
        values: [namespace],
      };
      return { ...webhook, namespaceSelector: { matchExpressions: [...expressions, excluded] } };
    }),
  };
}
