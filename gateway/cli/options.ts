/**
 * The commands' flags turned into the options of what they start: checked, with a UsageError that
 * names the flag for a value that cannot be. Nothing here touches the process; the files flags name
 * are read through the functions the commands pass in.
 */
import { resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { isLoopback, type LogLevel, type ServiceScope } from '../../protocol/index.ts';
import type { ReachMode } from '../../webhooks/reach.ts';
import type { HandlerSources } from '../binding/sources.ts';
import { parseScope } from '../dispatch/scope.ts';
import type { FunctionEndpoint } from '../dispatch/services.ts';
import type { ExplainRequest } from '../explain/cluster.ts';
import type { GatewayOptions } from '../gateway.ts';
import { livenessAddress } from '../health/endpoint.ts';
import { DEFAULT_IDENTITY, type Identity } from '../identity.ts';
import type { SecretName } from '../kube/secrets.ts';
import type { LogFormat } from '../logging.ts';
import { metricsAddress } from '../metrics/endpoint.ts';
import { DEV_PRIORITY } from '../peering/members.ts';
import type { PeeringOptions } from '../peering/peering.ts';
import { RBAC_CHECK_MODES, type RbacCheck } from '../rbac/at-start.ts';
import type { GatewayRbacFlags } from '../rbac/needed.ts';
import type { SettingsPatch } from '../settings.ts';
import { KOPF_PREFIX } from '../state/kopf.ts';
import { BUILD_TARGETS, type BuildOptions, type BuildTarget, workerNameOf } from './build.ts';
import { type COMMON, type GroupValues, UsageError } from './command-line.ts';
import {
  type ACTIVITIES,
  type ADMISSION,
  type BUILT,
  type CHECKED_SERVICE,
  type DEV_PEERING,
  type DEV_SESSION,
  type DEV_SESSIONS_ALLOWED,
  type EXPLAINED_HANDLERS,
  type EXPLAINED_OBJECT,
  type EXPLAINED_STATE,
  type FREEZE,
  type FUNCTION_SERVICES,
  HOST,
  type IDENTITY,
  type LISTENING,
  type OBJECTS,
  type OBSERVABILITY,
  type PEERED_IDENTITY,
  type PEERING,
  PORT,
  RBAC_CHECK_AT_START,
  type RBAC_GROUPS,
  type RBAC_UNUSED,
  type RELEASED_OBJECT,
  type RESUMED,
  type RIGHTS_AT_START,
  SESSION_SECONDS,
  type SIGNING,
  type SIGNING_AS_GATEWAY,
} from './flags.ts';
import type { ReleaseOptions } from './release.ts';
import type { ServeOptions } from './serve.ts';

/**
 * Where the gateway runs, for the peering namespace's default: the pod's namespace ($POD_NAMESPACE),
 * else the kubeconfig context's.
 */
export interface Whereabouts {
  podNamespace?: string | undefined;
  contextNamespace?: string | undefined;
}

/** A file's text, by its path. */
export type ReadText = (path: string) => string;

/** What run, gateway and dev give the gateway they start, all but its function services and secret. */
export type GatewaySettings = Omit<GatewayOptions, 'functions' | 'secret' | 'logger'>;

export type GatewayValues = GroupValues<
  typeof OBJECTS | typeof ACTIVITIES | typeof ADMISSION | typeof IDENTITY | typeof OBSERVABILITY
> &
  PeeringValues;

/** The peering flags of run and gateway, or of dev (whose gateway is at the dev priority: no --dev). */
export type PeeringValues = GroupValues<typeof PEERING> | GroupValues<typeof DEV_PEERING>;

/** How the gateway peers, from --peering-namespace, --priority, --dev and --standalone; undefined: alone. */
export function peeringOptions(values: PeeringValues, whereabouts: Whereabouts): PeeringOptions | undefined {
  const dev = 'dev' in values && values.dev === true;
  const sharding = 'sharding' in values && values.sharding === true;
  if (values.standalone) {
    const peeringFlag = dev
      ? '--dev'
      : sharding
        ? '--sharding'
        : values.priority !== undefined
          ? '--priority'
          : values['peering-namespace'] !== undefined
            ? '--peering-namespace'
            : undefined;
    if (peeringFlag) throw new UsageError(`--standalone and ${peeringFlag} exclude each other`);
    return undefined;
  }
  if (dev && values.priority !== undefined) throw new UsageError('--dev and --priority exclude each other');
  const given = values.priority;
  const priority = dev ? DEV_PRIORITY : given === undefined ? undefined : signedInteger(given, '--priority');
  return {
    namespace: peeringNamespace(values['peering-namespace'], whereabouts),
    ...(priority === undefined ? {} : { priority }),
    ...(sharding ? { sharding } : {}),
  };
}

/** The namespace the Leases of peering live in: as given, else the pod's, else the context's, else default. */
export function peeringNamespace(given: string | undefined, whereabouts: Whereabouts): string {
  const namespace = given ?? whereabouts.podNamespace ?? whereabouts.contextNamespace ?? 'default';
  if (!DNS_LABEL.test(namespace))
    throw new UsageError(`--peering-namespace expects a namespace, got "${namespace}"`);
  return namespace;
}

/** What `causeway dev` gives its own gateway: as run, at the dev priority unless --priority says another. */
export function devGatewayOptions(
  values: GatewayValues,
  readText: ReadText,
  whereabouts: Whereabouts,
): GatewaySettings {
  const options = gatewayOptions(values, readText, whereabouts);
  if (!options.peering || options.peering.priority !== undefined) return options;
  return { ...options, peering: { ...options.peering, priority: DEV_PRIORITY } };
}

/** What `causeway freeze` holds, but the client and who holds it. */
export function freezeOptions(
  values: GroupValues<typeof FREEZE | typeof PEERED_IDENTITY>,
  whereabouts: Whereabouts,
): { namespace: string; prefix: string; lifetimeS?: number; message: string; waitS: number } {
  const lifetime = values.lifetime === undefined ? undefined : integer(values.lifetime, '--lifetime');
  if (lifetime === 0) throw new UsageError('--lifetime expects at least 1');
  return {
    ...frozenGateways(values, whereabouts),
    ...(lifetime === undefined ? {} : { lifetimeS: lifetime }),
    message: values.message ?? '',
    waitS: integer(values.wait ?? '60', '--wait'),
  };
}

/** Which gateways `causeway freeze` and `causeway resume` act on: their peering namespace and identity. */
export function frozenGateways(
  values: GroupValues<typeof RESUMED | typeof PEERED_IDENTITY>,
  whereabouts: Whereabouts,
): { namespace: string; prefix: string } {
  return {
    namespace: peeringNamespace(values['peering-namespace'], whereabouts),
    prefix: values['annotation-prefix'] ?? DEFAULT_IDENTITY.annotationPrefix,
  };
}

/** What a gateway takes from the flags of run, gateway and dev alike. */
export function gatewayOptions(
  values: GatewayValues,
  readText: ReadText,
  whereabouts: Whereabouts,
): GatewaySettings {
  if (values.namespace?.length && values['all-namespaces']) {
    throw new UsageError('--namespace and --all-namespaces exclude each other');
  }
  const { stateIn, adoptKopf } = stateOptions(values);
  const timeout = values['function-timeout'];
  const peering = peeringOptions(values, whereabouts);
  return {
    identity: identityOf(values),
    ...(peering ? { peering } : {}),
    ...(values.namespace?.length ? { namespaces: values.namespace } : {}),
    ...(values.liveness ? { liveness: livenessUrl(values.liveness) } : {}),
    ...(values.metrics ? { metrics: metricsListen(values.metrics) } : {}),
    ...(values['login-from'] ? { loginFrom: values['login-from'] } : {}),
    settings: {
      persistence: { stateIn, ...(adoptKopf === undefined ? {} : { adoptKopf }) },
      ...(values.concurrency
        ? { processing: { concurrency: integer(values.concurrency, '--concurrency') } }
        : {}),
      calls: timeout ? { timeoutMs: integer(timeout, '--function-timeout') * 1000 } : {},
      admission: admissionSettings(values, readText),
    },
  };
}

/** Where the gateway keeps its state (--state-in) and whose Kopf state it adopts (--adopt-kopf-state). */
function stateOptions(values: Pick<GroupValues<typeof EXPLAINED_STATE>, 'state-in' | 'adopt-kopf-state'>): {
  stateIn: 'auto' | 'annotations';
  adoptKopf: string | undefined;
} {
  const stateIn = oneOf(values['state-in'] ?? 'auto', ['auto', 'annotations'], '--state-in');
  const adoptKopf = values['adopt-kopf-state'];
  if (adoptKopf !== undefined && !DNS_SUBDOMAIN.test(adoptKopf)) {
    throw new UsageError(
      `--adopt-kopf-state expects the annotation prefix of the Kopf operator's state (Kopf's default: ${KOPF_PREFIX}), got "${adoptKopf}"`,
    );
  }
  return { stateIn, adoptKopf };
}

/** The warning for a gateway told neither --namespace nor --all-namespaces; undefined when told either. */
export function namespacesWarning(values: GroupValues<typeof OBJECTS>): string | undefined {
  return values.namespace?.length || values['all-namespaces']
    ? undefined
    : 'neither --namespace nor --all-namespaces given: serving all namespaces';
}

export type GatewayOnlyValues = GatewayValues &
  GroupValues<typeof FUNCTION_SERVICES | typeof SIGNING | typeof DEV_SESSIONS_ALLOWED>;

/** What `causeway gateway` starts, all but the secret it shares with every service (--secret-file). */
export function gatewayOnlyOptions(
  values: GatewayOnlyValues,
  read: { text: ReadText; secret: (file: string) => Uint8Array },
  whereabouts: Whereabouts,
): Omit<GatewayOptions, 'secret' | 'logger'> {
  if (!values.functions?.length && !values['function-services'])
    throw new UsageError(`needs at least one --functions ${ENDPOINT}, or --function-services <namespace>`);
  const { functions, served, scopes, certificates, secretFiles } = functionServiceFlags(values, read.text);
  const devSessionUrls = perService(
    values['function-dev-sessions'],
    '--function-dev-sessions',
    '<name>=<url-glob>[,<url-glob>...], e.g. billing=https://*.ngrok.app',
    served,
    (globs) => {
      const urls = globs.split(',');
      return urls.every((glob) => /^https?:\/\/[^?#@\s]+$/.test(glob)) ? urls : undefined;
    },
  );
  const maxSeconds = values['dev-session-max-seconds'];
  const sessionSeconds =
    maxSeconds === undefined ? undefined : integer(maxSeconds, '--dev-session-max-seconds');
  if (sessionSeconds !== undefined && sessionSeconds < 1)
    throw new UsageError('--dev-session-max-seconds expects at least 1');
  const login = values['login-from'];
  if (login !== undefined && !served.has(login))
    throw new UsageError(`--login-from names "${login}", which no --functions gives`);
  const shared = gatewayOptions(values, read.text, whereabouts);
  const certificateAuthority = values['function-certificates'];
  return {
    ...shared,
    functions: functions.map((endpoint) => {
      const secretFile = secretFiles.get(endpoint.name);
      const certificate = certificates.get(endpoint.name);
      const scope = scopes.get(endpoint.name);
      const urls = devSessionUrls.get(endpoint.name);
      return {
        ...endpoint,
        ...(secretFile ? { secret: read.secret(secretFile) } : {}),
        ...(certificate ? { certificate } : {}),
        ...(scope ? { scope } : {}),
        ...(urls ? { devSessions: { urls, ...(sessionSeconds ? { maxSeconds: sessionSeconds } : {}) } } : {}),
      };
    }),
    ...(values['dev-sessions'] ? { devSessions: values['dev-sessions'] } : {}),
    ...(values['function-services'] ? { functionServices: values['function-services'] } : {}),
    settings: {
      ...shared.settings,
      calls: {
        ...shared.settings?.calls,
        ...(values['functions-ca'] ? { ca: read.text(values['functions-ca']) } : {}),
        ...(values['function-concurrency']
          ? { concurrencyPerService: integer(values['function-concurrency'], '--function-concurrency') }
          : {}),
        ...(values['allow-plain-http'] ? { plainHttp: true } : {}),
        ...(values.unscoped ? { unscoped: true } : {}),
        ...(values['allow-loopback-functions'] ? { allowLoopback: true } : {}),
        ...(certificateAuthority
          ? { certificateAuthority: namespacedName(certificateAuthority, '--function-certificates') }
          : {}),
      },
      signing: signingSettings(values),
    },
  };
}

const ENDPOINT = '<name>=<url>';

/**
 * The --functions services and what the per-service flags give each, by name: the gateway's own
 * reading, which `causeway rbac` (and the check at start) shares.
 */
function functionServiceFlags(
  values: {
    functions?: string[];
    'function-scope'?: string[];
    'function-tls'?: string[];
    'function-secret'?: string[];
    'function-certificates'?: string;
  },
  readText: ReadText,
) {
  const functions = (values.functions ?? []).map(functionEndpoint);
  const served = new Set(functions.map((endpoint) => endpoint.name));
  const secretFiles = perService(
    values['function-secret'],
    '--function-secret',
    '<name>=<file>',
    served,
    (file) => file,
  );
  const certificates = perService(
    values['function-tls'],
    '--function-tls',
    '<name>=<namespace>/<secret>',
    served,
    (secret) => namespacedName(secret, '--function-tls'),
  );
  if (certificates.size > 0 && !values['function-certificates'])
    throw new UsageError(
      '--function-tls needs --function-certificates <ns/name>, the Secret of the CA that issues them',
    );
  const scopes = perService(
    values['function-scope'],
    '--function-scope',
    '<name>=<file>',
    served,
    (file, name) => scopeFile(readText, file, name),
  );
  return { functions, served, scopes, certificates, secretFiles };
}

/** `billing=http://billing-functions:8080`: the service's name is pinned, not learnt from the service. */
function functionEndpoint(value: string): FunctionEndpoint {
  const match = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?)=(https?:\/\/.+)$/.exec(value);
  if (!match) {
    throw new UsageError(
      `--functions expects ${ENDPOINT}, the service's name and its URL (e.g. kopfexample=http://kopfexample-functions:8080), got "${value}"`,
    );
  }
  return { name: match[1] as string, url: match[3] as string };
}

/**
 * A per-service flag's values (`<name>=<value>`, `expects` saying what the value is), by service name,
 * each read by `parse` (undefined: malformed) and naming a --functions service.
 */
function perService<T>(
  given: readonly string[] | undefined,
  flag: string,
  expects: string,
  served: ReadonlySet<string>,
  parse: (value: string, name: string) => T | undefined,
): Map<string, T> {
  const values = new Map<string, T>();
  for (const each of given ?? []) {
    const match = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?)=(.+)$/.exec(each);
    const [name, value] = match ? [match[1] as string, match[3] as string] : [];
    const parsed = name === undefined || value === undefined ? undefined : parse(value, name);
    if (name === undefined || parsed === undefined)
      throw new UsageError(`${flag} expects ${expects}, got "${each}"`);
    if (!served.has(name)) throw new UsageError(`${flag} names "${name}", which no --functions gives`);
    values.set(name, parsed);
  }
  return values;
}

/** The scope pinned for service `name` in `file` (`/etc/causeway/billing-scope.yaml`), read and checked. */
function scopeFile(readText: ReadText, file: string, name: string): ServiceScope {
  try {
    return parseScope(parseYaml(readText(file)), `the scope of "${name}" in ${file}`);
  } catch (error) {
    throw new UsageError(`--function-scope ${name}: ${error instanceof Error ? error.message : error}`);
  }
}

/** The URL, once the liveness endpoint could listen there. */
function livenessUrl(url: string): string {
  try {
    livenessAddress(url);
  } catch (error) {
    throw new UsageError(`--liveness: ${(error as Error).message}`);
  }
  return url;
}

/** The address, once the metrics endpoint could listen there. */
export function metricsListen(address: string): string {
  try {
    metricsAddress(address);
  } catch (error) {
    throw new UsageError(`--metrics: ${(error as Error).message}`);
  }
  return address;
}

function signingSettings(values: GroupValues<typeof SIGNING>): SettingsPatch['signing'] {
  const keys = values['signing-keys'];
  const days = values['key-rotation-days'];
  const seconds = values['key-propagation-seconds'];
  // Not 0: every key would be due for replacement as it is made, a new one at every look, without end.
  if (days && integer(days, '--key-rotation-days') < 1)
    throw new UsageError('--key-rotation-days expects at least 1');
  return {
    ...(keys ? { keys: namespacedName(keys, '--signing-keys') } : {}),
    ...(days ? { rotateAfterMs: integer(days, '--key-rotation-days') * 24 * 3600_000 } : {}),
    ...(seconds ? { propagationMs: integer(seconds, '--key-propagation-seconds') * 1000 } : {}),
  };
}

function admissionSettings(
  values: GroupValues<typeof ADMISSION>,
  readText: ReadText,
): SettingsPatch['admission'] {
  const settings: SettingsPatch['admission'] = {};
  const listen = values['webhook-listen'];
  if (listen !== undefined) {
    const match = /^(.+):(\d+)$/.exec(listen);
    if (!match) throw new UsageError(`--webhook-listen expects host:port, got "${listen}"`);
    settings.listen = {
      host: (match[1] as string).replace(/^\[|\]$/g, ''),
      port: integer(match[2] as string, '--webhook-listen'),
    };
  }
  const service = values['webhook-service'];
  if (service !== undefined) {
    const match = /^([a-z0-9-]+)\/([a-z0-9-]+):(\d+)$/.exec(service);
    if (!match) throw new UsageError(`--webhook-service expects namespace/name:port, got "${service}"`);
    settings.reach = 'service';
    settings.service = {
      namespace: match[1] as string,
      name: match[2] as string,
      port: integer(match[3] as string, '--webhook-service'),
    };
    // Where the Service sends the apiserver, in the pod: at its own port unless its targetPort differs.
    settings.listen ??= { host: '0.0.0.0', port: settings.service.port };
  }
  const secret = values['webhook-certificates'];
  if (secret !== undefined) settings.certificates = namespacedName(secret, '--webhook-certificates');
  const reach = values['webhook-reach'];
  if (reach !== undefined) settings.reach = oneOf(reach, WEBHOOK_REACH_MODES, '--webhook-reach');
  const tokenSecret = values['ngrok-authtoken-secret'];
  const domain = values['ngrok-domain'];
  if (tokenSecret !== undefined || domain !== undefined) {
    settings.ngrok = {
      ...(tokenSecret !== undefined
        ? { authtokenSecret: namespacedName(tokenSecret, '--ngrok-authtoken-secret') }
        : {}),
      ...(domain !== undefined ? { domain } : {}),
    };
  }
  const [cert, key, ca] = [
    values['webhook-cert-file'],
    values['webhook-key-file'],
    values['webhook-ca-file'],
  ];
  if (cert !== undefined || key !== undefined || ca !== undefined) {
    if (cert === undefined && key === undefined) {
      throw new UsageError('--webhook-ca-file needs --webhook-cert-file and --webhook-key-file');
    }
    if (cert === undefined || key === undefined) {
      throw new UsageError('--webhook-cert-file and --webhook-key-file go together');
    }
    settings.certificateFiles = {
      cert: resolve(cert),
      key: resolve(key),
      ...(ca ? { ca: resolve(ca) } : {}),
    };
  }
  const clientCa = values['webhook-client-ca'];
  if (clientCa !== undefined) settings.clientCa = readText(clientCa);
  return settings;
}

const WEBHOOK_REACH_MODES: readonly ReachMode[] = ['auto', 'local', 'service', 'ngrok'];
const DEV_REACH_MODES = ['auto', 'local', 'ngrok'] as const;
/** What an annotation's prefix may be: a DNS subdomain. */
/** What a namespace's name may be. */
const DNS_LABEL = /^(?=.{1,63}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS_SUBDOMAIN = /^(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** A dev session with a deployed gateway, as `causeway dev --dev-sessions` asks for it. */
export interface DevSessionFlags {
  namespace: string;
  durationSeconds: number;
  /** How the deployed gateway reaches this machine. */
  reach: (typeof DEV_REACH_MODES)[number];
  ngrokDomain?: string;
  /** The gateway's public keys, from the ConfigMap of its --signing-keys; a shared secret otherwise. */
  publicKeys?: SecretName;
}

/** The session `causeway dev` holds with a deployed gateway; undefined without --dev-sessions. */
export function devSessionOptions(
  values: GroupValues<typeof DEV_SESSION | typeof ADMISSION>,
): DevSessionFlags | undefined {
  const namespace = values['dev-sessions'];
  if (!namespace) return undefined;
  const durationSeconds = integer(values['session-seconds'] ?? SESSION_SECONDS.default, '--session-seconds');
  if (durationSeconds < 3) throw new UsageError('--session-seconds expects at least 3');
  const keys = values['signing-keys'];
  const domain = values['ngrok-domain'];
  return {
    namespace,
    durationSeconds,
    reach: oneOf(values['dev-reach'] ?? 'auto', DEV_REACH_MODES, '--dev-reach'),
    ...(domain ? { ngrokDomain: domain } : {}),
    ...(keys ? { publicKeys: namespacedName(keys, '--signing-keys') } : {}),
  };
}

/** Where `causeway serve` listens, and the certificate it serves HTTPS with. */
export function serveOptions(values: GroupValues<typeof LISTENING>): Omit<ServeOptions, 'logger'> {
  const [cert, key] = [values['tls-cert'], values['tls-key']];
  if ((cert === undefined) !== (key === undefined))
    throw new UsageError('--tls-cert and --tls-key go together');
  return {
    port: integer(values.port ?? PORT.default, '--port'),
    host: values.host ?? HOST.default,
    ...(cert && key ? { tls: { certFile: cert, keyFile: key } } : {}),
  };
}

/**
 * The service `causeway conformance` checks, and the gateway's Secret of signing keys to sign with;
 * without one, it signs with a shared secret (--secret-file).
 */
/** A Workers name: what Cloudflare takes. */
const WORKER_NAME = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

export function buildOptions(module: string, values: GroupValues<typeof BUILT>): BuildOptions {
  const target = values.target as BuildTarget;
  if (!BUILD_TARGETS.includes(target))
    throw new UsageError(`--target expects ${BUILD_TARGETS.join(' or ')}, got "${values.target}"`);
  if (target === 'node' && (values['worker-name'] !== undefined || values['jwks-url'] !== undefined))
    throw new UsageError('--worker-name and --jwks-url are for --target workers');
  const name = values['worker-name'] ?? workerNameOf(module);
  if (!WORKER_NAME.test(name))
    throw new UsageError(
      `--worker-name expects lowercase letters, digits and dashes (at most 63), got "${name}"`,
    );
  const jwksUrl = values['jwks-url'];
  if (jwksUrl !== undefined) {
    const url = URL.parse(jwksUrl);
    // As causeway/functions takes a keys URL: plain http only on this host.
    if (!url || (url.protocol !== 'https:' && !(url.protocol === 'http:' && isLoopback(url.hostname))))
      throw new UsageError(`--jwks-url expects an https URL, got "${jwksUrl}"`);
  }
  return {
    target,
    module,
    out: resolve(values.out ?? `dist/${target}`),
    name,
    ...(jwksUrl ? { jwksUrl } : {}),
  };
}

export function conformanceOptions(
  url: string,
  values: GroupValues<typeof CHECKED_SERVICE | typeof SIGNING_AS_GATEWAY>,
  readText: ReadText,
): { url: string; name: string; ca?: string; signingKeys?: SecretName } {
  const keys = values['signing-keys'];
  return {
    url,
    name: values.name as string,
    ...(values['functions-ca'] ? { ca: readText(values['functions-ca']) } : {}),
    ...(keys ? { signingKeys: namespacedName(keys, '--signing-keys') } : {}),
  };
}

export function releaseOptions(
  target: { resource: string; name: string },
  values: GroupValues<typeof RELEASED_OBJECT | typeof IDENTITY>,
): ReleaseOptions {
  const { finalizer, fieldManager } = identityOf(values);
  return { ...target, finalizer, fieldManager, ...(values.namespace ? { namespace: values.namespace } : {}) };
}

export type ExplainValues = GroupValues<
  | typeof EXPLAINED_OBJECT
  | typeof EXPLAINED_HANDLERS
  | typeof EXPLAINED_STATE
  | typeof SIGNING_AS_GATEWAY
  | typeof IDENTITY
>;

/** What `causeway explain` reads, but the module loaded, the signer and the CA's text. */
export interface ExplainFlags {
  request: Omit<ExplainRequest, 'sources' | 'signer' | 'ca'>;
  sources: Omit<HandlerSources, 'module'>;
  /** The operator module's path (--module). */
  module?: string;
  output: 'text' | 'json';
  /** The gateway's Secret of signing keys to sign with (--signing-keys); a shared secret otherwise. */
  signingKeys?: SecretName;
}

export function explainOptions(
  object: string,
  values: ExplainValues,
  whereabouts: Whereabouts,
): ExplainFlags {
  const slash = object.indexOf('/');
  if (slash < 1 || slash === object.length - 1 || object.indexOf('/', slash + 1) >= 0)
    throw new UsageError(`expects <resource>/<name>, e.g. kopfexamples/my-object, got "${object}"`);
  if (!values.module && !values.functions?.length && !values['function-services'])
    throw new UsageError(
      `needs the handlers, from where the gateway gets them: --module <file>, --functions ${ENDPOINT} or --function-services <ns>`,
    );
  const { stateIn, adoptKopf } = stateOptions(values);
  const keys = values['signing-keys'];
  const functionServices = values['function-services'];
  return {
    request: {
      resource: object.slice(0, slash),
      name: object.slice(slash + 1),
      ...(values.namespace ? { namespace: values.namespace } : {}),
      identity: identityOf(values),
      stateIn,
      ...(adoptKopf ? { adoptKopf } : {}),
      peeringNamespace: peeringNamespace(values['peering-namespace'], whereabouts),
    },
    sources: {
      functions: (values.functions ?? []).map(functionEndpoint),
      ...(functionServices ? { functionServices } : {}),
    },
    ...(values.module ? { module: values.module } : {}),
    output: oneOf(values.output ?? 'text', ['text', 'json'], '--output'),
    ...(keys ? { signingKeys: namespacedName(keys, '--signing-keys') } : {}),
  };
}

export type RbacValues = GroupValues<(typeof RBAC_GROUPS)[number] | typeof RBAC_UNUSED>;

/** What `causeway rbac` reads the handlers from, and what of the gateway's flags its rules follow. */
export interface RbacFlags extends GatewayRbacFlags {
  sources: Omit<HandlerSources, 'module'>;
  /** The operator module's path (<module> or --module). */
  module?: string;
  /** Where the gateway keeps its signing keys; the manifests over HTTP are signed with the newest. */
  signingKeys?: SecretName;
  /** The files of the secrets shared with one service alone (--function-secret), by its name. */
  functionSecrets?: ReadonlyMap<string, string>;
}

/**
 * What `causeway rbac` prints or checks, its module given as its argument (`module`) or --module.
 * Refused for a gateway that logs in through a service: its rights are not a ServiceAccount's.
 */
export function rbacCommandOptions(
  module: string | undefined,
  values: RbacValues,
  readText: ReadText,
  whereabouts: Whereabouts,
): RbacFlags {
  if (module !== undefined && values.module !== undefined)
    throw new UsageError('the module is given twice: as <module> and with --module; give it once');
  const login = values['login-from'];
  if (login !== undefined)
    throw new UsageError(
      `--login-from ${login}: that gateway calls the API with the credentials "${login}"'s login handler gives, not as a ServiceAccount, so what they grant is that handler's business: there is no RBAC of a ServiceAccount to print or check`,
    );
  return rbacOptions({ ...values, ...(module === undefined ? {} : { module }) }, readText, whereabouts);
}

export function rbacOptions(values: RbacValues, readText: ReadText, whereabouts: Whereabouts): RbacFlags {
  if (!values.module && !values.functions?.length && !values['function-services'])
    throw new UsageError(
      `needs the handlers, from where the gateway gets them: <module>, --functions ${ENDPOINT} or --function-services <ns>`,
    );
  if (values.namespace?.length && values['all-namespaces'])
    throw new UsageError('--namespace and --all-namespaces exclude each other');
  if (values.standalone && values['peering-namespace'] !== undefined)
    throw new UsageError('--standalone and --peering-namespace exclude each other');
  const { functions, scopes, certificates, secretFiles } = functionServiceFlags(values, readText);
  const authority = values['function-certificates'];
  const account = values['service-account'];
  const keys = values['signing-keys'];
  const functionServices = values['function-services'];
  const webhookCertificates = values['webhook-certificates'];
  const ngrokAuthtoken = values['ngrok-authtoken-secret'];
  const devSessions = values['dev-sessions'];
  const { stateIn } = stateOptions(values);
  return {
    sources: {
      functions: functions.map((endpoint) => {
        const scope = scopes.get(endpoint.name);
        return scope ? { ...endpoint, scope } : endpoint;
      }),
      ...(functionServices ? { functionServices } : {}),
    },
    ...(values.module ? { module: values.module } : {}),
    ...(keys ? { signingKeys: namespacedName(keys, '--signing-keys') } : {}),
    ...(secretFiles.size > 0 ? { functionSecrets: secretFiles } : {}),
    request: {
      account: account
        ? namespacedName(account, '--service-account')
        : {
            namespace: whereabouts.podNamespace ?? whereabouts.contextNamespace ?? 'default',
            name: 'causeway-gateway',
          },
      ...(values.namespace?.length ? { namespaces: values.namespace } : {}),
      stateIn,
      ...(values.standalone
        ? {}
        : { peeringNamespace: peeringNamespace(values['peering-namespace'], whereabouts) }),
      ...(keys ? { signingKeys: namespacedName(keys, '--signing-keys') } : {}),
      ...(authority ? { functionCertificates: namespacedName(authority, '--function-certificates') } : {}),
      functionTls: [...certificates.values()],
      ...(functionServices ? { functionServices } : {}),
      ...(devSessions ? { devSessions } : {}),
    },
    admission: {
      configurationName: values['annotation-prefix'] ?? DEFAULT_IDENTITY.annotationPrefix,
      ...(webhookCertificates
        ? { certificates: namespacedName(webhookCertificates, '--webhook-certificates') }
        : {}),
      ...(ngrokAuthtoken
        ? { ngrokAuthtoken: namespacedName(ngrokAuthtoken, '--ngrok-authtoken-secret') }
        : {}),
    },
  };
}

/**
 * How `causeway gateway` and `causeway run` check their rights at start (--rbac-check): against the
 * rules `causeway rbac` makes of the same flags (`module`: run's); undefined when off.
 */
export function rbacCheckOptions(
  values: GroupValues<typeof RIGHTS_AT_START> & RbacValues,
  readText: ReadText,
  whereabouts: Whereabouts,
): RbacCheck | undefined {
  const mode = oneOf(values['rbac-check'] ?? RBAC_CHECK_AT_START.default, RBAC_CHECK_MODES, '--rbac-check');
  if (mode === 'off') return undefined;
  const { request, admission } = rbacOptions(values, readText, whereabouts);
  return { mode, flags: { request, admission } };
}

export function identityOf(values: GroupValues<typeof IDENTITY>): Identity {
  return {
    statusKey: values['status-key'] ?? DEFAULT_IDENTITY.statusKey,
    annotationPrefix: values['annotation-prefix'] ?? DEFAULT_IDENTITY.annotationPrefix,
    finalizer: values.finalizer ?? DEFAULT_IDENTITY.finalizer,
    fieldManager: values['field-manager'] ?? DEFAULT_IDENTITY.fieldManager,
  };
}

export function logLevel(values: GroupValues<typeof COMMON>): LogLevel {
  const given = values['log-level'];
  if (given !== undefined) {
    if (!LOG_LEVELS.includes(given as LogLevel))
      throw new UsageError(`--log-level expects one of ${LOG_LEVELS.join(', ')}, got "${given}"`);
    if (values.verbose || values.quiet)
      throw new UsageError('--log-level says it all: drop --verbose and --quiet');
    return given as LogLevel;
  }
  if (values.verbose) return 'debug';
  return values.quiet ? 'warning' : 'info';
}

const LOG_LEVELS: readonly LogLevel[] = ['debug', 'info', 'warning', 'error'];

/**
 * `auto` is text where a person reads stderr (a terminal), JSON where a program does. The flag wins
 * over CAUSEWAY_LOG_FORMAT, which sets it for every command of a container or a shell.
 */
export function logFormat(
  values: GroupValues<typeof COMMON>,
  terminal: boolean,
  environment: string | undefined,
): LogFormat {
  const given = values['log-format'] ?? environment ?? 'auto';
  if (given === 'auto') return terminal ? 'text' : 'json';
  if (given === 'text' || given === 'json') return given;
  const source = values['log-format'] === undefined ? 'CAUSEWAY_LOG_FORMAT' : '--log-format';
  throw new UsageError(`${source} expects text, json or auto, got "${given}"`);
}

function namespacedName(value: string, flag: string): SecretName {
  const match = /^([a-z0-9-]+)\/([a-z0-9.-]+)$/.exec(value);
  if (!match) throw new UsageError(`${flag} expects namespace/name, got "${value}"`);
  return { namespace: match[1] as string, name: match[2] as string };
}

function signedInteger(value: string, flag: string): number {
  const number = Number(value);
  if (!/^-?\d+$/.test(value) || !Number.isSafeInteger(number))
    throw new UsageError(`${flag} expects a whole number, got "${value}"`);
  return number;
}

/** Decimal digits only: Number() also reads `0x10`, `1e3`, ` 8` and `` (0), none of which says a whole number. */
function integer(value: string, flag: string): number {
  const number = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(number))
    throw new UsageError(`${flag} expects a whole number, got "${value}"`);
  return number;
}

function oneOf<T extends string>(value: string, allowed: readonly T[], flag: string): T {
  if (!allowed.includes(value as T)) {
    const choices = `${allowed.slice(0, -1).join(', ')} or ${allowed.at(-1)}`;
    throw new UsageError(`${flag} expects ${choices}, got "${value}"`);
  }
  return value as T;
}
