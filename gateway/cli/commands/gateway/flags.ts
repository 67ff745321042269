/** The flags of `causeway gateway` alone, and the list of all its groups, which `causeway rbac` takes too. */
import { DEFAULT_DEV_SESSION_SECONDS } from '../../../services/dev-sessions.ts';
import { flag, group } from '../../command-line.ts';
import { ACTIVITIES } from '../../flags/activities.ts';
import { ADMISSION } from '../../flags/admission.ts';
import { FUNCTION_SERVICES } from '../../flags/function-services.ts';
import { IDENTITY } from '../../flags/identity.ts';
import { IMPERSONATION } from '../../flags/impersonation.ts';
import { OBJECTS } from '../../flags/objects.ts';
import { OBSERVABILITY } from '../../flags/observability.ts';
import { PEERING } from '../../flags/peering.ts';
import { RIGHTS_AT_START } from '../../flags/rbac-check.ts';
import { SIGNING } from '../../flags/signing.ts';

export const DEV_SESSIONS = flag({
  name: 'dev-sessions',
  value: '<namespace>',
  description:
    "Let dev sessions, Leases in this namespace, send a service's calls to a laptop while they are renewed, for a service that allows them (--function-dev-sessions, or its FunctionService's spec.devSessions); others are ignored with a warning.",
});

/** Letting `causeway dev` sessions take a deployed service's calls to a laptop (gateway). */
export const DEV_SESSIONS_ALLOWED = group(
  'Dev sessions',
  DEV_SESSIONS,
  flag({
    name: 'function-dev-sessions',
    value: '<name>=<url-glob>[,<url-glob>...]',
    multiple: true,
    description:
      "Let dev sessions send that --functions service's calls to a URL matching one of these globs (* stands for characters other than / and :), e.g. billing=https://*.ngrok.app; repeat for several.",
  }),
  flag({
    name: 'dev-session-max-seconds',
    value: '<n>',
    default: String(DEFAULT_DEV_SESSION_SECONDS),
    description: 'The longest such a session lasts without renewal, whatever it asks.',
  }),
);

/** The groups of `causeway gateway`'s flags (gateway); `causeway run` takes some of them. */
export const GATEWAY_GROUPS = [
  OBJECTS,
  FUNCTION_SERVICES,
  IMPERSONATION,
  SIGNING,
  ACTIVITIES,
  ADMISSION,
  DEV_SESSIONS_ALLOWED,
  PEERING,
  IDENTITY,
  RIGHTS_AT_START,
  OBSERVABILITY,
] as const;
