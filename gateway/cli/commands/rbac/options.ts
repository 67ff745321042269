/**
 * `causeway rbac`'s flags, checked: the gateway's flags its rules follow. The gateway and run check
 * their rights at start (--rbac-check) against the same rules, read from the same flags.
 */
import type { HandlerSources } from '../../../binding/sources.ts';
import { DEFAULT_IDENTITY } from '../../../identity.ts';
import type { SecretName } from '../../../kube/secrets.ts';
import { RBAC_CHECK_MODES, type RbacCheck } from '../../../rbac/at-start.ts';
import type { GatewayRbacFlags } from '../../../rbac/needed.ts';
import { type GroupValues, UsageError } from '../../command-line.ts';
import { ENDPOINT, functionServiceFlags } from '../../flags/function-services.ts';
import { impersonationNamespace } from '../../flags/impersonation.ts';
import { stateOptions } from '../../flags/objects.ts';
import { peeringNamespace } from '../../flags/peering.ts';
import { RBAC_CHECK_AT_START, type RIGHTS_AT_START } from '../../flags/rbac-check.ts';
import type { ReadText, Whereabouts } from '../../process.ts';
import { namespacedName, oneOf } from '../../values.ts';
import type { RBAC_GROUPS, RBAC_UNUSED } from './flags.ts';

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
  const impersonate = impersonationNamespace(values, whereabouts);
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
    ...(impersonate === undefined ? {} : { impersonate }),
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
  const { request, admission, impersonate } = rbacOptions(values, readText, whereabouts);
  return { mode, flags: { request, admission, ...(impersonate === undefined ? {} : { impersonate }) } };
}
