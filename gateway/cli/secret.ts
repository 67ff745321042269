import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { encodeSecret } from '../../protocol/index.ts';

export const SECRET_VARIABLE = 'CAUSEWAY_SECRET';

/** The shared signing secret: from a file, else from $CAUSEWAY_SECRET. */
export function readSecret(file: string | undefined): Uint8Array {
  const value = file ? readFileSync(file, 'utf8').trim() : process.env[SECRET_VARIABLE];
  if (!value) {
    throw new Error(
      `no signing secret: set ${SECRET_VARIABLE} or pass --secret-file (the same secret as the function services)`,
    );
  }
  return encodeSecret(value);
}

/** For one process that is both gateway and function service: a fresh secret nobody else knows. */
export function ensureProcessSecret(): Uint8Array {
  process.env[SECRET_VARIABLE] ||= randomBytes(32).toString('base64url');
  return encodeSecret(process.env[SECRET_VARIABLE]);
}
