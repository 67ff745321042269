import { readFileSync } from 'node:fs';
import { encodeSecret, SECRET_VARIABLE } from '../../protocol/index.ts';

/** The shared signing secret: from a file, else from $CAUSEWAY_SECRET. */
export function readSecret(file: string | undefined): Uint8Array {
  return encodeSecret(readSecretText(file));
}

/** The same, as the text a child process gets in $CAUSEWAY_SECRET (checked for length). */
export function readSecretText(file: string | undefined): string {
  const value = file ? readFileSync(file, 'utf8').trim() : process.env[SECRET_VARIABLE];
  if (!value) {
    throw new Error(
      `no signing secret: set ${SECRET_VARIABLE} or pass --secret-file (the same secret as the function services)`,
    );
  }
  encodeSecret(value);
  return value;
}
