import { randomBytes } from 'node:crypto';
import { encodeSecret, SECRET_VARIABLE } from '../protocol/index.ts';

/**
 * For one process that is both gateway and function service (a fetch handler in
 * `GatewayOptions.functions`): the secret in $CAUSEWAY_SECRET, where causeway/functions looks for
 * it, set to a fresh one nobody else knows if missing.
 */
export function ensureProcessSecret(): Uint8Array {
  process.env[SECRET_VARIABLE] ||= randomBytes(32).toString('base64url');
  return encodeSecret(process.env[SECRET_VARIABLE]);
}
