/** The options of the gateway that run, gateway and dev start, from the flags they share. */
import type { GatewayOptions } from '../gateway.ts';
import { type GroupValues, UsageError } from './command-line.ts';
import { type ACTIVITIES, livenessUrl } from './flags/activities.ts';
import { type ADMISSION, admissionSettings } from './flags/admission.ts';
import { type IDENTITY, identityOf } from './flags/identity.ts';
import { type IMPERSONATION, impersonationNamespace } from './flags/impersonation.ts';
import { type OBJECTS, stateOptions } from './flags/objects.ts';
import { metricsListen, type OBSERVABILITY } from './flags/observability.ts';
import { type PeeringValues, peeringOptions } from './flags/peering.ts';
import type { ReadText, Whereabouts } from './process.ts';
import { integer } from './values.ts';

/** What run, gateway and dev give the gateway they start, all but its function services and secret. */
export type GatewaySettings = Omit<GatewayOptions, 'functions' | 'secret' | 'logger'>;

export type GatewayValues = GroupValues<
  | typeof OBJECTS
  | typeof ACTIVITIES
  | typeof ADMISSION
  | typeof IDENTITY
  | typeof OBSERVABILITY
  | typeof IMPERSONATION
> &
  PeeringValues;

/** What a gateway takes from the flags of run, gateway and dev alike. */
export function gatewayOptions(
  values: GatewayValues,
  readText: ReadText,
  whereabouts: Whereabouts,
): GatewaySettings {
  if (values.namespace?.length && values['all-namespaces']) {
    throw new UsageError('--namespace and --all-namespaces exclude each other');
  }
  const ownNamespace = values['serve-own-namespace'] ? undefined : whereabouts.podNamespace;
  if (ownNamespace !== undefined && values.namespace?.includes(ownNamespace)) {
    throw new UsageError(
      `--namespace names ${ownNamespace}, the namespace the gateway runs in, which it serves to no function service: run it in a namespace of its own, or give --serve-own-namespace`,
    );
  }
  const { stateIn, adoptKopf } = stateOptions(values);
  const timeout = values['function-timeout'];
  const peering = peeringOptions(values, whereabouts);
  const impersonate = impersonationNamespace(values, whereabouts);
  return {
    identity: identityOf(values),
    ...(peering ? { peering } : {}),
    ...(values.namespace?.length ? { namespaces: values.namespace } : {}),
    ...(ownNamespace ? { ownNamespace } : {}),
    ...(values.liveness ? { liveness: livenessUrl(values.liveness) } : {}),
    ...(values.metrics ? { metrics: metricsListen(values.metrics) } : {}),
    ...(values['login-from'] ? { loginFrom: values['login-from'] } : {}),
    ...(impersonate === undefined ? {} : { impersonate }),
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
