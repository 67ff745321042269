/**
 * Every flag of the CLI, in the groups the commands take them in (commands/). A group several
 * commands take is defined once here; a name with another meaning in another command (--secret-file:
 * sign with it in gateway, verify with it in serve) is a flag of its own, with its own description.
 */
import packageJson from '../../package.json' with { type: 'json' };
import { JWKS_URL_VARIABLE, JWKS_VARIABLE, SECRET_VARIABLE } from '../../protocol/index.ts';
import { DEFAULT_IDENTITY } from '../identity.ts';
import { DEV_PRIORITY } from '../peering/members.ts';
import { DEFAULT_DEV_SESSION_SECONDS } from '../services/dev-sessions.ts';
import { DEFAULT_SETTINGS } from '../settings.ts';
import { KOPF_PREFIX } from '../state/kopf.ts';
import { flag, group, groupWithout } from './command-line.ts';

const DAY_MS = 24 * 3600_000;

const STATE_IN = flag({
  name: 'state-in',
  value: '<where>',
  description:
    "Where to record that an object was handled: auto (the status when the resource's status keeps it, else annotations; the default) or annotations.",
});
const ADOPT_KOPF_STATE = flag({
  name: 'adopt-kopf-state',
  value: '<prefix>',
  description: `Take over from a Kopf operator that kept its state under this annotation prefix (Kopf's default: ${KOPF_PREFIX}): what it handled is not handled again, what changed since is an update. See docs/migrating-from-kopf.md.`,
});

const NAMESPACE = flag({
  name: 'namespace',
  short: 'n',
  value: '<ns>',
  multiple: true,
  description:
    'Serve this namespace; repeat for several. Globs (team-*) and negations (!kube-*) serve namespaces as they appear and disappear.',
});
const ALL_NAMESPACES = flag({
  name: 'all-namespaces',
  short: 'A',
  description: 'Serve every namespace (the default when no --namespace is given).',
});
const FUNCTION_SCOPE = flag({
  name: 'function-scope',
  value: '<name>=<file>',
  multiple: true,
  description:
    "What that service may reach, pinned: a YAML file of resources (what its handlers watch, are sent and patch), admission (what its webhooks review), children (the kinds its apply may create, in the handled object's namespace) and namespaces (narrowing). Each --functions service needs one, unless --unscoped. See docs/security.md.",
});
const FUNCTION_TLS = flag({
  name: 'function-tls',
  value: '<name>=<ns/secret>',
  multiple: true,
  description:
    "Issue that service a serving certificate for the host of its https URL (<svc>.<ns>.svc, both forms) into this Secret, which its pod mounts for serve --tls-cert/--tls-key; renewed before its end. The service is then trusted with that CA's certificates only.",
});
const FUNCTION_CERTIFICATES = flag({
  name: 'function-certificates',
  value: '<ns/name>',
  description:
    'Keep the CA that issues those certificates in this Secret, made there at the first start, read by the gateway only.',
});
const FUNCTION_SECRET = flag({
  name: 'function-secret',
  value: '<name>=<file>',
  multiple: true,
  description: 'A secret shared with that service alone.',
});
const NGROK_AUTHTOKEN_SECRET = flag({
  name: 'ngrok-authtoken-secret',
  value: '<ns/name>',
  description: 'The Secret whose key "authtoken" holds the ngrok authtoken.',
});
const WEBHOOK_CERTIFICATES = flag({
  name: 'webhook-certificates',
  value: '<ns/name>',
  default: 'in memory, new at every start',
  description: 'Keep its certificates in this Secret, shared by restarts and replicas.',
});

/** Which objects a gateway serves, and how (run, gateway, dev). */
export const OBJECTS = group(
  'Objects',
  NAMESPACE,
  ALL_NAMESPACES,
  flag({
    name: 'concurrency',
    value: '<n>',
    default: String(DEFAULT_SETTINGS.processing.concurrency),
    description: 'Objects processed at once, per resource.',
  }),
  flag({
    name: 'function-timeout',
    value: '<s>',
    default: String(DEFAULT_SETTINGS.calls.timeoutMs / 1000),
    description: 'Seconds one function call may take.',
  }),
  STATE_IN,
  ADOPT_KOPF_STATE,
);

/** The function services a gateway calls, and how it trusts them (gateway). */
export const FUNCTION_SERVICES = group(
  'Function services',
  flag({
    name: 'functions',
    value: '<name>=<url>',
    multiple: true,
    description:
      'A function service: the name it must answer to (its calls are signed for it) and its base URL; repeat for several.',
  }),
  FUNCTION_SCOPE,
  flag({
    name: 'unscoped',
    description:
      "Serve --functions services given no --function-scope: what they answer is done with the gateway's rights (a warning names each).",
  }),
  flag({
    name: 'function-services',
    value: '<ns>',
    description:
      'Also serve the function services named by FunctionService objects in this namespace, as they come, change and go; their status says what the gateway found (see `causeway crd`). Their URLs may not name a loopback or link-local host (the cloud metadata service).',
  }),
  flag({
    name: 'allow-loopback-functions',
    description:
      "Let FunctionService objects name loopback and link-local hosts: for a gateway on a developer's machine.",
  }),
  flag({
    name: 'function-concurrency',
    value: '<n>',
    default: String(DEFAULT_SETTINGS.calls.concurrencyPerService),
    description: 'Calls at once to one function service; the others wait their turn.',
  }),
  flag({
    name: 'functions-ca',
    value: '<file>',
    default: "the system's roots",
    description:
      "The CA to trust for https function services; not for one given --function-tls, pinned to the gateway's own CA.",
  }),
  FUNCTION_TLS,
  FUNCTION_CERTIFICATES,
  flag({
    name: 'allow-plain-http',
    description:
      'Call function services over plain HTTP beyond this host: only where the network encrypts (a mesh); a warning names each such service. Refused otherwise.',
  }),
);

/** What a gateway signs its calls with (gateway). */
export const SIGNING = group(
  'Signing the calls',
  flag({
    name: 'signing-keys',
    value: '<ns/name>',
    description:
      "Sign calls with the gateway's Ed25519 keys, kept in this Secret and published, public halves only, in the ConfigMap of the same name (jwks.json) for the services to verify with. Made there if missing; rotated with overlap, so no call is refused.",
  }),
  flag({
    name: 'key-rotation-days',
    value: '<n>',
    default: String(DEFAULT_SETTINGS.signing.rotateAfterMs / DAY_MS),
    description: 'Make a new signing key when the newest is this old.',
  }),
  flag({
    name: 'key-propagation-seconds',
    value: '<n>',
    default: String(DEFAULT_SETTINGS.signing.propagationMs / 1000),
    description: 'How long a new key is published before it signs: the time the services take to see it.',
  }),
  flag({
    name: 'secret-file',
    value: '<path>',
    default: `$${SECRET_VARIABLE}`,
    description: 'A secret shared with the services (HS256) instead of keys.',
  }),
  FUNCTION_SECRET,
);

/** For operators with probe or login handlers (run, gateway, dev). */
export const ACTIVITIES = group(
  'Activities, for operators with probe or login handlers (docs/activities.md)',
  flag({
    name: 'liveness',
    value: '<url>',
    description:
      "Serve a liveness endpoint, e.g. http://0.0.0.0:8080/healthz: 200 with the probes' results while the gateway is healthy, 500 and why when it is not.",
  }),
  flag({
    name: 'login-from',
    value: '<name>',
    description:
      "Log in to the Kubernetes API with what that function service's login handler gives, instead of the kubeconfig; its calls are then signed with a secret shared with it (not --signing-keys, which live in the cluster).",
  }),
);

/** What the gateway or the function service tells of itself (run, gateway, dev, serve). */
export const OBSERVABILITY = group(
  'Observability (docs/observability.md)',
  flag({
    name: 'metrics',
    value: '<host:port>',
    description:
      'Serve Prometheus metrics at /metrics on this address, e.g. 0.0.0.0:9090 or :9090 (every address).',
  }),
);

/** For operators with validate or mutate handlers (run, gateway, dev). */
export const ADMISSION = group(
  'Admission webhooks, for operators with validate or mutate handlers',
  flag({
    name: 'webhook-reach',
    value: '<how>',
    description:
      'How the apiserver reaches the webhook server: local (a URL on this host), service (see --webhook-service), ngrok (a tunnel; the authtoken from $NGROK_AUTHTOKEN or --ngrok-authtoken-secret), or auto (the default: service in a pod, local when the apiserver is on this host, ngrok otherwise).',
  }),
  flag({
    name: 'webhook-listen',
    value: '<host:port>',
    default: '127.0.0.1:0, any port; 0.0.0.0 at the port of --webhook-service',
    description: 'Where the HTTPS webhook server listens.',
  }),
  flag({
    name: 'webhook-service',
    value: '<ns/name:port>',
    description:
      'The Service through which the apiserver reaches it in a cluster (implies --webhook-reach service; listens on 0.0.0.0 at that port unless --webhook-listen names its targetPort).',
  }),
  NGROK_AUTHTOKEN_SECRET,
  flag({
    name: 'ngrok-domain',
    value: '<domain>',
    description: 'A reserved ngrok domain, for a URL that stays the same.',
  }),
  WEBHOOK_CERTIFICATES,
  flag({
    name: 'webhook-cert-file',
    value: '<file>',
    description:
      "Serve this certificate (with --webhook-key-file) instead of one the gateway makes, read again when it changes (cert-manager's way).",
  }),
  flag({ name: 'webhook-key-file', value: '<file>', description: 'Its private key.' }),
  flag({
    name: 'webhook-ca-file',
    value: '<file>',
    default: 'the certificate',
    description: 'What the apiserver is to trust for it.',
  }),
  flag({
    name: 'webhook-client-ca',
    value: '<file>',
    description:
      "Answer only clients whose certificate this CA signed (the apiserver's, with its --admission-control-config-file).",
  }),
);

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

const PEERING_NAMESPACE = flag({
  name: 'peering-namespace',
  value: '<ns>',
  description:
    "Where the gateways of this identity coordinate through Leases: one leads (watches, handlers, timers, daemons), the others stand by and serve admission. Default: $POD_NAMESPACE in a pod, else the kubeconfig context's namespace, else default. See docs/peering.md.",
});
const PRIORITY = flag({
  name: 'priority',
  value: '<n>',
  default: '0',
  description: 'The gateways of the highest priority lead; the others pause while one of them runs.',
});
const STANDALONE = flag({
  name: 'standalone',
  description: 'Do not peer: lead from the start, and write no Lease.',
});

/** How a gateway coordinates with the others of its identity (run, gateway). */
export const PEERING = group(
  'Peering',
  PEERING_NAMESPACE,
  PRIORITY,
  flag({
    name: 'dev',
    description: `Run at the dev priority (${DEV_PRIORITY}), as \`kopf run --dev\`: the deployed gateways pause while this one runs, and go on when it stops or dies.`,
  }),
  flag({
    name: 'sharding',
    description:
      'Share the objects among every gateway of the highest priority (give it to all of them), each handling a share by a consistent-hash ring of their ids, instead of one leading alone.',
  }),
  STANDALONE,
);

/** How `causeway dev`'s own gateway coordinates: at the dev priority, unless told another. */
export const DEV_PEERING = group(
  'Peering',
  PEERING_NAMESPACE,
  { ...PRIORITY, default: String(DEV_PRIORITY) },
  STANDALONE,
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

const ANNOTATION_PREFIX = flag({
  name: 'annotation-prefix',
  value: '<prefix>',
  default: DEFAULT_IDENTITY.annotationPrefix,
  description: 'Prefix of its annotations.',
});

/** Whose gateways a freeze pauses (freeze, resume). */
export const PEERED_IDENTITY = group('Identity', ANNOTATION_PREFIX);

/** The names a gateway keeps its state under (run, gateway, dev, release, explain). */
export const IDENTITY = group(
  'Identity, so that two deployments can serve the same objects',
  flag({
    name: 'status-key',
    value: '<key>',
    default: DEFAULT_IDENTITY.statusKey,
    description: "Key of the gateway's state under status.",
  }),
  ANNOTATION_PREFIX,
  flag({
    name: 'finalizer',
    value: '<name>',
    default: DEFAULT_IDENTITY.finalizer,
    description: 'Its finalizer.',
  }),
  flag({
    name: 'field-manager',
    value: '<name>',
    default: DEFAULT_IDENTITY.fieldManager,
    description: 'The field manager of its writes.',
  }),
);

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

/** What `causeway conformance` and `causeway explain` sign with, as the gateway would (conformance, explain). */
export const SIGNING_AS_GATEWAY = group(
  'Signing, as the gateway',
  flag({
    name: 'signing-keys',
    value: '<ns/name>',
    description: "Sign with the gateway's newest key, read from its Secret (the gateway's --signing-keys).",
  }),
  flag({
    name: 'secret-file',
    value: '<path>',
    default: `$${SECRET_VARIABLE}`,
    description: 'Sign with a secret shared with the service.',
  }),
);

const OBJECT_NAMESPACE = flag({
  name: 'namespace',
  short: 'n',
  value: '<ns>',
  default: 'default',
  description: "The object's namespace, for a namespaced resource.",
});

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

/** Where `causeway explain` reads the handlers: from where the gateway gets them (explain). */
export const EXPLAINED_HANDLERS = group(
  'Handlers, from where the gateway gets them (one or more)',
  flag({
    name: 'module',
    value: '<file>',
    description: 'An operator module, loaded as `causeway run` loads it.',
  }),
  flag({
    name: 'functions',
    value: '<name>=<url>',
    multiple: true,
    description:
      'A function service over HTTP, as the gateway is given it: its manifest is read, signed for that name (--signing-keys or --secret-file); repeat for several.',
  }),
  flag({
    name: 'function-services',
    value: '<ns>',
    description:
      'The function services of the FunctionService objects in this namespace, read as the gateway reads them (a secretRef signs for its own service).',
  }),
  flag({
    name: 'functions-ca',
    value: '<file>',
    default: "the system's roots",
    description: 'The CA to trust for an https service that names none.',
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

export const RBAC_CHECK_AT_START = flag({
  name: 'rbac-check',
  value: '<what>',
  default: 'refuse',
  description:
    "At start, before it watches anything (or writes anything but its signing keys and its services' certificates, which reading their handlers needs), check that the cluster grants it the RBAC `causeway rbac` computes from the same flags and services: refuse (exit 1 naming each permission missing), warn (log them and start) or off. Once: the services FunctionService objects add later are not checked; nor is a gateway that logs in through a service (--login-from).",
});

/** Whether the gateway checks its own rights at start (run, gateway). */
export const RIGHTS_AT_START = group('Its RBAC, checked at start', RBAC_CHECK_AT_START);

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

/** What help says of the cluster the commands reach. */
export const CLUSTER_NOTE =
  'The cluster is the current context of $KUBECONFIG or ~/.kube/config, or the in-cluster account.';
