/** What the gateway signs its calls with (gateway), and what a command signs with as the gateway would (conformance, explain, rbac). */
import { SECRET_VARIABLE } from '../../../protocol/index.ts';
import { DEFAULT_SETTINGS, type SettingsPatch } from '../../settings.ts';
import { flag, type GroupValues, group, UsageError } from '../command-line.ts';
import { integer, namespacedName } from '../values.ts';
import { FUNCTION_SECRET } from './function-services.ts';

const DAY_MS = 24 * 3600_000;

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

export function signingSettings(values: GroupValues<typeof SIGNING>): SettingsPatch['signing'] {
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
