import { randomBytes } from 'node:crypto';
import { encodeSecret } from '../protocol/index.ts';

/** Where the gateway and the function services look for their shared signing secret. */
export const SECRET_VARIABLE = 'CAUSEWAY_SECRET';

/**
 * For one process that is both gateway and function service (a fetch handler in
 * `GatewayOptions.functions`): the secret in $CAUSEWAY_SECRET, where causeway/functions looks for
 * it, set to a fresh one nobody else knows if missing.
 */
export function ensureProcessSecret(): Uint8Array {
  process.env[SECRET_VARIABLE] ||= randomBytes(32).toString('base64url');
  return encodeSecret(process.env[SECRET_VARIABLE]);
}
