/** `causeway explain`'s object and flags, checked: what it reads, and how it prints it. */
import type { HandlerSources } from '../../../binding/sources.ts';
import type { ExplainRequest } from '../../../explain/cluster.ts';
import type { SecretName } from '../../../kube/secrets.ts';
import { type GroupValues, UsageError } from '../../command-line.ts';
import { ENDPOINT, functionEndpoint } from '../../flags/function-services.ts';
import type { EXPLAINED_HANDLERS } from '../../flags/handlers.ts';
import { type IDENTITY, identityOf } from '../../flags/identity.ts';
import { stateOptions } from '../../flags/objects.ts';
import { peeringNamespace } from '../../flags/peering.ts';
import type { SIGNING_AS_GATEWAY } from '../../flags/signing.ts';
import type { Whereabouts } from '../../process.ts';
import { DNS_LABEL, namespacedName, oneOf } from '../../values.ts';
import type { EXPLAINED_OBJECT, EXPLAINED_STATE } from './flags.ts';

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
  const gatewayNamespace = values['gateway-namespace'];
  if (gatewayNamespace !== undefined && !DNS_LABEL.test(gatewayNamespace))
    throw new UsageError(`--gateway-namespace expects a namespace, got "${gatewayNamespace}"`);
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
      ...(gatewayNamespace ? { ownNamespace: gatewayNamespace } : {}),
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
