/**
 * API Priority and Fairness made to refuse one client: a ServiceAccount of its own whose requests go
 * to a priority level too small for them, which answers 429 Too Many Requests; and the apiserver's
 * count of what that level refused or let through.
 */
import { KubeConfig } from '@kubernetes/client-node';
import { samples } from './metrics.ts';
import { eventually } from './operator.ts';
import type { PrivateCluster } from './private-cluster.ts';

/**
 * A ServiceAccount with every right, whose requests API Priority and Fairness puts in a priority
 * level of one share, neither lent nor borrowing, that rejects what does not fit at once; its
 * kubeconfig, once the level is in force. The priority level and the FlowSchema are both named `level`.
 */
export async function throttledServiceAccount(
  cluster: PrivateCluster,
  namespace: string,
  name: string,
  level: string,
): Promise<KubeConfig> {
  const { client, controlPlane } = cluster;
  const create = (path: string, body: object) => client.request(path, { method: 'POST', body });
  await create(`/api/v1/namespaces/${namespace}/serviceaccounts`, {
    apiVersion: 'v1',
    kind: 'ServiceAccount',
    metadata: { name },
  });
  await create('/apis/rbac.authorization.k8s.io/v1/clusterrolebindings', {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name: `${namespace}-${name}` },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
    subjects: [{ kind: 'ServiceAccount', name, namespace }],
  });
  await create('/apis/flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations', {
    apiVersion: 'flowcontrol.apiserver.k8s.io/v1',
    kind: 'PriorityLevelConfiguration',
    metadata: { name: level },
    spec: {
      type: 'Limited',
      limited: {
        nominalConcurrencyShares: 1,
        lendablePercent: 0,
        borrowingLimitPercent: 0,
        limitResponse: { type: 'Reject' },
      },
    },
  });
  await create('/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas', {
    apiVersion: 'flowcontrol.apiserver.k8s.io/v1',
    kind: 'FlowSchema',
    metadata: { name: level },
    spec: {
      priorityLevelConfiguration: { name: level },
      matchingPrecedence: 500,
      distinguisherMethod: { type: 'ByUser' },
      rules: [
        {
          subjects: [{ kind: 'ServiceAccount', serviceAccount: { name, namespace } }],
          resourceRules: [
            { verbs: ['*'], apiGroups: ['*'], resources: ['*'], namespaces: ['*'], clusterScope: true },
          ],
          nonResourceRules: [{ verbs: ['*'], nonResourceURLs: ['*'] }],
        },
      ],
    },
  });
  await eventually('the priority level in force', async () =>
    (await controlPlane.metrics()).includes(
      `apiserver_flowcontrol_nominal_limit_seats{priority_level="${level}"}`,
    )
      ? true
      : undefined,
  );
  const { status } = await client.request<{ status: { token: string } }>(
    `/api/v1/namespaces/${namespace}/serviceaccounts/${name}/token`,
    {
      method: 'POST',
      body: {
        apiVersion: 'authentication.k8s.io/v1',
        kind: 'TokenRequest',
        spec: { expirationSeconds: 3600 },
      },
    },
  );
  const config = new KubeConfig();
  config.loadFromOptions({
    clusters: [{ name: 'private', server: controlPlane.server, caData: btoa(controlPlane.caPem) }],
    users: [{ name, token: status.token }],
    contexts: [{ name, cluster: 'private', user: name }],
    currentContext: name,
  });
  return config;
}

/** Requests of the priority level `level` the apiserver has `rejected` (429) or `dispatched`, from its metrics. */
export async function flowControlCount(
  cluster: PrivateCluster,
  level: string,
  outcome: 'rejected' | 'dispatched',
): Promise<number> {
  const all = samples(await cluster.controlPlane.metrics());
  let total = 0;
  for (const [key, value] of all) {
    if (
      key.startsWith(`apiserver_flowcontrol_${outcome}_requests_total{`) &&
      key.includes(`priority_level="${level}"`)
    )
      total += value;
  }
  return total;
}
