/** `causeway rbac`: the least-privilege RBAC of a gateway serving given services, for `kubectl apply -f -` (../../../rbac/). */
import { stringify } from 'yaml';
import { connectServices } from '../../../binding/sources.ts';
import { KubeClient } from '../../../kube/client.ts';
import { Discovery } from '../../../kube/discovery.ts';
import { loadKubeConfig } from '../../../kube/kubeconfig.ts';
import { describePermission, type Permission, permissionsOf } from '../../../rbac/check.ts';
import { checkGranted, username } from '../../../rbac/granted.ts';
import { gatewayRbac } from '../../../rbac/needed.ts';
import { CLUSTER_NOTE } from '../../cluster.ts';
import { command } from '../../command-line.ts';
import { loadOperatorModule } from '../../operator-module.ts';
import { readText, whereabouts } from '../../process.ts';
import { gatewaySigner, readSecret } from '../../secret.ts';
import { RBAC_GROUPS, RBAC_UNUSED } from './flags.ts';
import { rbacCommandOptions } from './options.ts';

export const rbacCommand = command({
  name: 'rbac',
  arguments: [],
  optionalArgument: 'module',
  summary:
    "Print the least-privilege ServiceAccount, Roles, ClusterRole and bindings of a gateway serving these handlers with these flags, for `causeway rbac … | kubectl apply -f -`: list, watch and patch of the resources the handlers name and their status, Events, the children their scopes let them apply, Leases of peering and of dev sessions, its keys' and certificates' Secrets and ConfigMap, FunctionService objects, webhook configurations. Roles in each namespace served; a ClusterRole only for what is cluster-scoped or served in every namespace. With --impersonate: each service's ServiceAccount with Roles for its children (create, get, patch) and events, in the namespaces it serves, and the gateway's right to impersonate exactly those accounts instead of its own rules for children. Give it the gateway's arguments as they are (every flag of `causeway gateway` is taken), and the module of `causeway run <module>`.",
  note: `${CLUSTER_NOTE} It reads the handlers from where the gateway gets them, and discovery to resolve the resources they name (their CustomResourceDefinitions must be installed). The rules of --signing-keys, --function-tls and --function-certificates are for the gateway's own Secrets there. What a service that declares no scope and is pinned none may apply cannot be known: it gets no rule for children, and a warning names it. A gateway that logs in through a service (--login-from) is refused: its rights are not a ServiceAccount's.`,
  groups: [...RBAC_GROUPS, RBAC_UNUSED],
  async run({ args, values, logger }) {
    const { sources, module, signingKeys, functionSecrets, request, admission, impersonate } =
      rbacCommandOptions(args.module, values, readText, whereabouts());
    const client = await KubeClient.fromConfig(loadKubeConfig());
    const ca = values['functions-ca'];
    const services = await connectServices(
      {
        sources: {
          ...sources,
          functions: sources.functions.map((endpoint) => {
            const secretFile = functionSecrets?.get(endpoint.name);
            return secretFile ? { ...endpoint, secret: readSecret(secretFile) } : endpoint;
          }),
          ...(module ? { module: await loadOperatorModule(module) } : {}),
        },
        signer: gatewaySigner(client, signingKeys, values['secret-file']),
        ...(ca ? { ca: readText(ca) } : {}),
        ...(impersonate === undefined ? {} : { impersonate }),
      },
      client,
    );
    const { objects, unserved } = await (async () => {
      try {
        return await gatewayRbac(
          client,
          { request, admission, ...(impersonate === undefined ? {} : { impersonate }) },
          services,
          await Discovery.load(client),
          logger,
        );
      } finally {
        await Promise.all(services.map((service) => service.close()));
      }
    })();
    if (unserved.length > 0)
      throw new Error(
        `${unserved.join('; ')}, which the cluster does not serve: install its CustomResourceDefinition first`,
      );
    if (!values.check) {
      process.stdout.write(objects.map((object) => stringify(object)).join('---\n'));
      return;
    }
    const checkedAs = await username(client);
    const account = `system:serviceaccount:${request.account.namespace}:${request.account.name}`;
    if (checkedAs !== account)
      logger.warning(
        `checked as ${checkedAs}, not the gateway's account ${account}: run with that account's credentials to check what it is granted`,
      );
    const { missing, incomplete } = await check(client, permissionsOf(objects, request.account), checkedAs);
    if (incomplete.length > 0)
      logger.info(
        `the rules the cluster listed in ${incomplete.join(', ')} may be incomplete (an authorizer that cannot list its rules, such as a webhook): each permission they lacked was asked of it again`,
      );
    if (missing > 0) process.exitCode = 1;
  },
});

/** Prints what the cluster's answer lacks of the gateway's permissions, and what it grants beyond them. */
async function check(client: KubeClient, wanted: Permission[], checkedAs: string) {
  const { missing, extra, incomplete } = await checkGranted(client, wanted);
  const lines = [
    `checked as: ${checkedAs}`,
    ...missing.map((permission) => `missing: ${describePermission(permission)}`),
    ...extra.map((permission) => `extra: ${describePermission(permission)}`),
    missing.length === 0
      ? `granted: all ${wanted.length} permissions of the rules`
      : `${missing.length} of ${wanted.length} permissions missing: \`causeway rbac\` with the same flags, piped to \`kubectl apply -f -\`, grants them`,
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
  return { missing: missing.length, incomplete };
}
