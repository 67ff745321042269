/** `causeway dev`'s flags, checked: its own gateway's options, and the session it holds with a deployed gateway. */
import type { SecretName } from '../../../kube/secrets.ts';
import { DEV_PRIORITY } from '../../../peering/members.ts';
import { type GroupValues, UsageError } from '../../command-line.ts';
import type { ADMISSION } from '../../flags/admission.ts';
import { type GatewaySettings, type GatewayValues, gatewayOptions } from '../../gateway-options.ts';
import type { ReadText, Whereabouts } from '../../process.ts';
import { integer, namespacedName, oneOf } from '../../values.ts';
import { type DEV_SESSION, SESSION_SECONDS } from './flags.ts';

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
