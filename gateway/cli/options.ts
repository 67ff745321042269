/**
 * The commands' flags turned into the options of what they start: checked, with a UsageError that
 * names the flag for a value that cannot be. Nothing here touches the process; the files flags name
 * are read through the functions the commands pass in.
 */
import { resolve } from 'node:path';
import { isLoopback } from '../../protocol/index.ts';
import type { HandlerSources } from '../binding/sources.ts';
import type { ExplainRequest } from '../explain/cluster.ts';
import type { GatewayOptions } from '../gateway.ts';
import { DEFAULT_IDENTITY } from '../identity.ts';
import type { SecretName } from '../kube/secrets.ts';
import { DEV_PRIORITY } from '../peering/members.ts';
import { RBAC_CHECK_MODES, type RbacCheck } from '../rbac/at-start.ts';
import type { GatewayRbacFlags } from '../rbac/needed.ts';
import { type GroupValues, UsageError } from './command-line.ts';
import { BUILD_TARGETS, type BuildOptions, type BuildTarget, workerNameOf } from './commands/build/build.ts';
import type { ReleaseOptions } from './commands/release/release.ts';
import type { ServeOptions } from './commands/serve/serve.ts';
import {
  ENDPOINT,
  type FUNCTION_SERVICES,
  functionEndpoint,
  functionServiceFlags,
  perService,
} from './flags/function-services.ts';
import type { EXPLAINED_HANDLERS } from './flags/handlers.ts';
import { type IDENTITY, identityOf, type PEERED_IDENTITY } from './flags/identity.ts';
import { stateOptions } from './flags/objects.ts';
import { peeringNamespace } from './flags/peering.ts';
import { RBAC_CHECK_AT_START, type RIGHTS_AT_START } from './flags/rbac-check.ts';
import { type SIGNING, type SIGNING_AS_GATEWAY, signingSettings } from './flags/signing.ts';
import {
  type ADMISSION,
  type BUILT,
  type CHECKED_SERVICE,
  type DEV_SESSION,
  type DEV_SESSIONS_ALLOWED,
  type EXPLAINED_OBJECT,
  type EXPLAINED_STATE,
  type FREEZE,
  HOST,
  type LISTENING,
  PORT,
  type RBAC_GROUPS,
  type RBAC_UNUSED,
  type RELEASED_OBJECT,
  type RESUMED,
  SESSION_SECONDS,
} from './flags.ts';
import { type GatewaySettings, type GatewayValues, gatewayOptions } from './gateway-options.ts';
import type { ReadText, Whereabouts } from './process.ts';
import { integer, namespacedName, oneOf } from './values.ts';

export * from './flags/identity.ts';
export * from './flags/logging.ts';
export * from './flags/objects.ts';
export * from './flags/observability.ts';
export * from './flags/peering.ts';
export * from './gateway-options.ts';
export type { ReadText, Whereabouts } from './process.ts';

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

const DEV_REACH_MODES = ['auto', 'local', 'ngrok'] as const;

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
