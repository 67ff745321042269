/**
 * What the cluster grants the identity of the client, for `causeway rbac --check` and the gateway's
 * check at start (at-start.ts): a SelfSubjectRulesReview in each namespace of a Role (its rules there,
 * wildcards and all), and a SelfSubjectAccessReview for each permission of the ClusterRole (a rules
 * review is per namespace, so it cannot say what holds cluster-wide). Both are open to every
 * authenticated user, so they need no extra rights, and the apiserver stores neither.
 */
import type { KubeClient } from '../kube/client.ts';
import { type Comparison, compare, type Permission } from './check.ts';
import type { PolicyRule } from './rbac.ts';

const AUTHORIZATION = '/apis/authorization.k8s.io/v1';

export interface Checked extends Comparison {
  /**
   * Namespaces whose rules review said it may be incomplete (an authorizer that cannot list its rules,
   * such as a webhook): what it lacked there was asked again, one access review each.
   */
  incomplete: string[];
}

/**
 * `wanted` against what the client's identity is granted: the reviews at once, then, where a rules
 * review may be incomplete, an access review of each permission it lacks, which every authorizer answers.
 */
export async function checkGranted(client: KubeClient, wanted: readonly Permission[]): Promise<Checked> {
  const namespaces = [
    ...new Set(wanted.flatMap(({ namespace }) => (namespace === undefined ? [] : [namespace]))),
  ];
  const clusterWide = wanted.filter(({ namespace }) => namespace === undefined);
  const [reviews, allowed] = await Promise.all([
    Promise.all(namespaces.map((namespace) => rulesReview(client, namespace))),
    Promise.all(clusterWide.map((permission) => allowedByReview(client, permission))),
  ]);
  const comparison = compare(wanted, new Map(reviews.map(({ namespace, rules }) => [namespace, rules])));
  const incomplete = reviews.filter((review) => review.incomplete).map(({ namespace }) => namespace);
  const unsure = comparison.missing.filter(({ namespace }) => incomplete.includes(namespace as string));
  const confirmed = await Promise.all(unsure.map((permission) => allowedByReview(client, permission)));
  const grantedAfterAll = unsure.filter((_, index) => confirmed[index]);
  return {
    missing: [
      ...comparison.missing.filter((permission) => !grantedAfterAll.includes(permission)),
      ...clusterWide.filter((_, index) => !allowed[index]),
    ],
    extra: comparison.extra,
    incomplete,
  };
}

/** Who the client is, as the apiserver authenticated it (a SelfSubjectReview). */
export async function username(client: KubeClient): Promise<string> {
  const review = await client.request<{ status: { userInfo: { username?: string } } }>(
    '/apis/authentication.k8s.io/v1/selfsubjectreviews',
    {
      method: 'POST',
      body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
    },
  );
  return review.status.userInfo.username ?? '(anonymous)';
}

interface RulesReview {
  status: { resourceRules?: PolicyRule[]; incomplete?: boolean };
}

async function rulesReview(client: KubeClient, namespace: string) {
  const review = await client.request<RulesReview>(`${AUTHORIZATION}/selfsubjectrulesreviews`, {
    method: 'POST',
    body: {
      apiVersion: 'authorization.k8s.io/v1',
      kind: 'SelfSubjectRulesReview',
      spec: { namespace },
    },
  });
  return {
    namespace,
    // The review leaves empty lists out.
    rules: (review.status.resourceRules ?? []).map((rule) => ({
      ...rule,
      apiGroups: rule.apiGroups ?? [],
      resources: rule.resources ?? [],
    })),
    incomplete: review.status.incomplete === true,
  };
}

/** Whether the authorizers allow `permission`, in its namespace or cluster-wide. */
async function allowedByReview(client: KubeClient, permission: Permission): Promise<boolean> {
  const [resource, subresource] = permission.resource.split('/');
  const review = await client.request<{ status: { allowed?: boolean } }>(
    `${AUTHORIZATION}/selfsubjectaccessreviews`,
    {
      method: 'POST',
      body: {
        apiVersion: 'authorization.k8s.io/v1',
        kind: 'SelfSubjectAccessReview',
        spec: {
          resourceAttributes: {
            ...(permission.namespace === undefined ? {} : { namespace: permission.namespace }),
            group: permission.group,
            resource,
            verb: permission.verb,
            ...(subresource === undefined ? {} : { subresource }),
            ...(permission.name === undefined ? {} : { name: permission.name }),
          },
        },
      },
    },
  );
  return review.status.allowed === true;
}
