import type { SecretName } from '../../../kube/secrets.ts';
import type { GroupValues } from '../../command-line.ts';
import type { SIGNING_AS_GATEWAY } from '../../flags/signing.ts';
import type { ReadText } from '../../process.ts';
import { namespacedName } from '../../values.ts';
import type { CHECKED_SERVICE } from './flags.ts';

/**
 * The service `causeway conformance` checks, and the gateway's Secret of signing keys to sign with;
 * without one, it signs with a shared secret (--secret-file).
 */
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
