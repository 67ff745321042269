/**
 * Every flag of the CLI, in the groups the commands take them in (commands/). A group several
 * commands take is defined once here; a name with another meaning in another command (--secret-file:
 * sign with it in gateway, verify with it in serve) is a flag of its own, with its own description.
 */
import packageJson from '../../package.json' with { type: 'json' };
import { JWKS_URL_VARIABLE, JWKS_VARIABLE, SECRET_VARIABLE } from '../../protocol/index.ts';
import { DEFAULT_DEV_SESSION_SECONDS } from '../services/dev-sessions.ts';
import { flag, group, groupWithout } from './command-line.ts';
import { ACTIVITIES } from './flags/activities.ts';
import { ADMISSION, NGROK_AUTHTOKEN_SECRET, WEBHOOK_CERTIFICATES } from './flags/admission.ts';
import {
  FUNCTION_CERTIFICATES,
  FUNCTION_SCOPE,
  FUNCTION_SECRET,
  FUNCTION_SERVICES,
  FUNCTION_TLS,
} from './flags/function-services.ts';
import { EXPLAINED_HANDLERS } from './flags/handlers.ts';
import { IDENTITY, PEERED_IDENTITY } from './flags/identity.ts';
import { OBJECT_NAMESPACE } from './flags/object.ts';
import { ADOPT_KOPF_STATE, ALL_NAMESPACES, NAMESPACE, OBJECTS, STATE_IN } from './flags/objects.ts';
import { OBSERVABILITY } from './flags/observability.ts';
import { PEERING, PEERING_NAMESPACE, STANDALONE } from './flags/peering.ts';
import { RIGHTS_AT_START } from './flags/rbac-check.ts';
import { SIGNING, SIGNING_AS_GATEWAY } from './flags/signing.ts';

export * from './cluster.ts';
export * from './flags/activities.ts';
export * from './flags/admission.ts';
export * from './flags/function-services.ts';
export * from './flags/handlers.ts';
export * from './flags/identity.ts';
export * from './flags/object.ts';
export * from './flags/objects.ts';
export * from './flags/observability.ts';
export * from './flags/peering.ts';
export * from './flags/rbac-check.ts';
export * from './flags/signing.ts';

const DEV_SESSIONS = flag({
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

export const SESSION_SECONDS = flag({
  name: 'session-seconds',
  value: '<n>',
  default: '15',
  description:
    "The Lease's duration: after a crash, calls go back to the deployed service this long after the last renewal.",
});

/** The session `causeway dev` holds with a deployed gateway (dev). */
export const DEV_SESSION = group(
  'A dev session, with a gateway deployed in the cluster',
  flag({
    name: 'dev-sessions',
    value: '<namespace>',
    description:
      "Have the gateway deployed with --dev-sessions <namespace> send the module's service's calls here: hold a Lease for the service there (or its FunctionService's devSession field) while this runs, verifying calls with the gateway's public keys (--signing-keys) or its secret (--secret-file).",
  }),
  flag({
    name: 'signing-keys',
    value: '<ns/name>',
    description:
      "The gateway's --signing-keys: verify calls with its public keys, read from their ConfigMap.",
  }),
  flag({
    name: 'secret-file',
    value: '<path>',
    default: `$${SECRET_VARIABLE}`,
    description: 'Verify calls with a secret shared with the gateway.',
  }),
  SESSION_SECONDS,
  flag({
    name: 'dev-reach',
    value: '<how>',
    description:
      'How the deployed gateway reaches this machine: local (it runs on this host), ngrok (a tunnel; $NGROK_AUTHTOKEN), or auto (the default: local when the apiserver is on this host, ngrok otherwise).',
  }),
);

/** What `causeway freeze` holds (freeze). */
export const FREEZE = group(
  'The freeze',
  PEERING_NAMESPACE,
  flag({
    name: 'lifetime',
    value: '<s>',
    description: 'Seconds it lasts; by default, until `causeway resume`.',
  }),
  flag({
    name: 'message',
    value: '<text>',
    description: 'Why: the gateways log it as they pause, and `kubectl get lease` shows it.',
  }),
  flag({
    name: 'wait',
    value: '<s>',
    default: '60',
    description: 'How long to wait for every gateway to pause (their calls in flight finish first).',
  }),
);

/** Which freeze `causeway resume` removes (resume). */
export const RESUMED = group('The freeze', PEERING_NAMESPACE);

export const PORT = flag({
  name: 'port',
  short: 'p',
  value: '<port>',
  default: '8080',
  description: 'Port to listen on.',
});

export const HOST = flag({
  name: 'host',
  value: '<address>',
  default: '0.0.0.0',
  description: 'Address to listen on.',
});

/** Where `causeway serve` listens (serve). */
export const LISTENING = group(
  'Listening',
  PORT,
  HOST,
  flag({
    name: 'tls-cert',
    value: '<file>',
    description:
      "Serve HTTPS with this certificate (PEM), and --tls-key its key; both read again when they change (the Secret a gateway's --function-tls renews, mounted), looked at every 10 s.",
  }),
  flag({ name: 'tls-key', value: '<file>', description: "The certificate's key (PEM)." }),
);

/** What `causeway serve` verifies the gateway's calls with (serve). */
export const VERIFYING = group(
  'Verifying the calls',
  flag({
    name: 'jwks-file',
    value: '<file>',
    default: `$${JWKS_VARIABLE}, then $${JWKS_URL_VARIABLE}`,
    description:
      "Verify calls with the gateway's public keys in this file (its ConfigMap's jwks.json, mounted), followed as it changes.",
  }),
  flag({
    name: 'secret-file',
    value: '<path>',
    default: `$${SECRET_VARIABLE}`,
    description: 'Verify with a secret shared with the gateway.',
  }),
);

/** The service `causeway conformance` checks (conformance). */
export const CHECKED_SERVICE = group(
  'The service',
  flag({
    name: 'name',
    value: '<name>',
    required: true,
    description: 'The name the service must answer to: its calls are signed for it.',
  }),
  flag({
    name: 'functions-ca',
    value: '<file>',
    default: "the system's roots",
    description: 'The CA to trust for an https service.',
  }),
);

/** The object `causeway release` releases (release). */
export const RELEASED_OBJECT = group('The object', OBJECT_NAMESPACE);

/** The object `causeway explain` explains, and how (explain). */
export const EXPLAINED_OBJECT = group(
  'The object',
  OBJECT_NAMESPACE,
  flag({
    name: 'output',
    short: 'o',
    value: '<format>',
    default: 'text',
    description:
      'text, a report for people; or json, an Explanation (apiVersion causeway.dev/v1) whose shape is documented in docs/observability.md and only grows within its version.',
  }),
);

/** Where `causeway explain` finds the gateway's state and its replicas, as the gateway was told (explain). */
export const EXPLAINED_STATE = group("The gateway's state", STATE_IN, ADOPT_KOPF_STATE, PEERING_NAMESPACE);

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

/** The groups of `causeway gateway`'s flags (gateway); `causeway run` takes some of them. */
export const GATEWAY_GROUPS = [
  OBJECTS,
  FUNCTION_SERVICES,
  SIGNING,
  ACTIVITIES,
  ADMISSION,
  DEV_SESSIONS_ALLOWED,
  PEERING,
  IDENTITY,
  RIGHTS_AT_START,
  OBSERVABILITY,
] as const;

/** Where `causeway rbac` reads the handlers, and the gateway's flags its rules follow (rbac). */
export const RBAC_GROUPS = [
  EXPLAINED_HANDLERS,
  RBAC_ACCOUNT,
  RBAC_CHECK,
  RBAC_OBJECTS,
  RBAC_SERVICES,
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

/** The project `causeway init` makes (init). */
export const PROJECT = group(
  'The project',
  flag({
    name: 'causeway',
    value: '<spec>',
    default: `^${packageJson.version}`,
    description:
      "The project's causeway dependency: a version range, or the path of a package tarball or directory.",
  }),
);

/** What `causeway build` makes, and where (build). */
export const BUILT = group(
  'The build',
  flag({
    name: 'target',
    value: '<target>',
    required: true,
    description:
      'workers: a bundle for Cloudflare Workers and the wrangler.toml that deploys it; node: a bundle that node runs as the function service, for an image.',
  }),
  flag({
    name: 'out',
    value: '<dir>',
    default: 'dist/<target>',
    description: 'The folder to write into, made if missing.',
  }),
  flag({
    name: 'worker-name',
    value: '<name>',
    default: "the module's file name",
    description: "The Worker's name in wrangler.toml (workers).",
  }),
  flag({
    name: 'jwks-url',
    value: '<url>',
    description: `The https URL where the Worker fetches the gateway's public keys, written into wrangler.toml as $${JWKS_URL_VARIABLE} (workers). Without it, the Worker verifies with a secret: \`wrangler secret put ${SECRET_VARIABLE}\`.`,
  }),
);
