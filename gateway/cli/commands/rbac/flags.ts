/** The flags of `causeway rbac` alone; those it shares with other commands are in ../../flags/. */
import { flag, group, groupWithout } from '../../command-line.ts';
import { NGROK_AUTHTOKEN_SECRET, WEBHOOK_CERTIFICATES } from '../../flags/admission.ts';
import {
  FUNCTION_CERTIFICATES,
  FUNCTION_SCOPE,
  FUNCTION_SECRET,
  FUNCTION_TLS,
} from '../../flags/function-services.ts';
import { EXPLAINED_HANDLERS } from '../../flags/handlers.ts';
import { PEERED_IDENTITY } from '../../flags/identity.ts';
import { IMPERSONATION } from '../../flags/impersonation.ts';
import { ALL_NAMESPACES, NAMESPACE, STATE_IN } from '../../flags/objects.ts';
import { PEERING_NAMESPACE, STANDALONE } from '../../flags/peering.ts';
import { SIGNING_AS_GATEWAY } from '../../flags/signing.ts';
import { DEV_SESSIONS, GATEWAY_GROUPS } from '../gateway/flags.ts';

/** The account `causeway rbac` grants the rules to (rbac). */
export const RBAC_ACCOUNT = group(
  'The account',
  flag({
    name: 'service-account',
    value: '<ns/name>',
    default: "causeway-gateway in the context's namespace",
    description: "The gateway's ServiceAccount: made, and bound to every Role and ClusterRole printed.",
  }),
  flag({
    name: 'login-from',
    value: '<name>',
    description:
      "The gateway's --login-from: refused, as such a gateway calls the API with the credentials that service's login handler gives, not as a ServiceAccount; what they grant is that handler's business.",
  }),
);

/** Whether `causeway rbac` prints the rules or checks them (rbac). */
export const RBAC_CHECK = group(
  'Checking',
  flag({
    name: 'check',
    description:
      "Print no YAML: compare the rules with what the cluster grants the kubeconfig's identity (run it with the gateway's credentials), name each one missing and, as information, what is granted beyond them on the same resources; exit 1 when one is missing.",
  }),
);

/** What `causeway rbac` grants: the objects served, as the gateway is told them (rbac). */
export const RBAC_OBJECTS = group('Objects', NAMESPACE, ALL_NAMESPACES, STATE_IN);

/** What the gateway is told of its services beyond where they are (rbac). */
export const RBAC_SERVICES = group(
  'Function services, as the gateway is told them',
  FUNCTION_SCOPE,
  FUNCTION_TLS,
  FUNCTION_CERTIFICATES,
  {
    ...FUNCTION_SECRET,
    description: 'A secret shared with that service alone: its manifest is read signed with it.',
  },
);

/** Where the gateway peers (rbac). */
export const RBAC_PEERING = group('Peering', PEERING_NAMESPACE, STANDALONE);

/** What the gateway keeps for its admission webhooks (rbac). */
export const RBAC_ADMISSION = group('Admission webhooks', WEBHOOK_CERTIFICATES, NGROK_AUTHTOKEN_SECRET);

/** Where the gateway watches the Leases of dev sessions (rbac). */
export const RBAC_DEV_SESSIONS = group('Dev sessions', DEV_SESSIONS);

/** Where `causeway rbac` reads the handlers, and the gateway's flags its rules follow (rbac). */
export const RBAC_GROUPS = [
  EXPLAINED_HANDLERS,
  RBAC_ACCOUNT,
  RBAC_CHECK,
  RBAC_OBJECTS,
  RBAC_SERVICES,
  IMPERSONATION,
  SIGNING_AS_GATEWAY,
  RBAC_PEERING,
  RBAC_ADMISSION,
  RBAC_DEV_SESSIONS,
  PEERED_IDENTITY,
] as const;

/** The rest of the gateway's flags: taken, so that `causeway rbac` takes a gateway's arguments as they are (rbac). */
export const RBAC_UNUSED = groupWithout(
  "The gateway's other flags, accepted without effect on its RBAC",
  GATEWAY_GROUPS,
  RBAC_GROUPS,
);
