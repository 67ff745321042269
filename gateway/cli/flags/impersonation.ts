/** Whether the gateway writes what its services ask as their own ServiceAccounts (run, gateway, rbac). */
import { flag, type GroupValues, group } from '../command-line.ts';
import type { Whereabouts } from '../process.ts';

export const IMPERSONATION = group(
  'Writes as the services',
  flag({
    name: 'impersonate',
    description:
      "Apply each service's children and post its events as a ServiceAccount of that service (Impersonate-User), so that the apiserver's RBAC and admission check them as well as the gateway's scope: the one its scope names (impersonate: <ns>/<name>), else one of its name in its FunctionService's namespace, else in the gateway's. The handled object's own patch and status stay the gateway's. A write its account may not make fails with the apiserver's reason, never made with the gateway's rights instead; `causeway rbac --impersonate` prints each account, its Role, and the gateway's right to impersonate exactly those accounts.",
  }),
);

/**
 * The namespace of the accounts of services with no FunctionService of their own, under --impersonate:
 * the gateway's (its pod's, else its kubeconfig context's); undefined without the flag.
 */
export function impersonationNamespace(
  values: GroupValues<typeof IMPERSONATION>,
  whereabouts: Whereabouts,
): string | undefined {
  if (!values.impersonate) return undefined;
  return whereabouts.podNamespace ?? whereabouts.contextNamespace ?? 'default';
}
