/**
 * What the CLI's commands sign and verify with: a shared secret (a file, or $CAUSEWAY_SECRET), the
 * gateway's public keys (a JWKS file, read again when it changes, as a mounted ConfigMap does when the
 * gateway rotates its keys), or the gateway's own keys in their Secret.
 */
import { readFileSync, unwatchFile, watchFile } from 'node:fs';
import {
  encodeSecret,
  JWKS_URL_VARIABLE,
  JWKS_VARIABLE,
  parsePublicKeys,
  SECRET_VARIABLE,
} from '../../protocol/index.ts';
import { signingKeyOf } from '../dispatch/keys.ts';
import { hmacSigner, keySigner, type Signer, type SigningKey } from '../dispatch/signer.ts';
import type { KubeClient } from '../kube/client.ts';
import { readStoredKeys } from '../services/signing-keys.ts';

/** A shared signing secret: from a file, else from $CAUSEWAY_SECRET. */
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

/** How often a public keys file is looked at: a rotated key waits minutes before it signs. */
const KEYS_FILE_POLL_MS = 5_000;

/**
 * For `causeway serve`: puts what the service verifies with where causeway/functions looks (the
 * process environment), refusing to start without any. A JWKS file is checked now and followed
 * (polled: a mounted ConfigMap changes by a symlink swap, which fs.watch misses). Returns a stop.
 */
export function provideVerificationKeys(options: { jwksFile?: string; secretFile?: string }): () => void {
  const { jwksFile, secretFile } = options;
  if (jwksFile && secretFile) throw new Error('--jwks-file and --secret-file exclude each other');
  if (secretFile) {
    process.env[SECRET_VARIABLE] = readSecretText(secretFile);
    return () => {};
  }
  if (!jwksFile) {
    const configured = [JWKS_VARIABLE, JWKS_URL_VARIABLE, SECRET_VARIABLE].find((name) => process.env[name]);
    if (!configured) {
      throw new Error(
        `nothing to verify the gateway's calls with: pass --jwks-file (the gateway's public keys) or --secret-file, or set ${JWKS_VARIABLE}, ${JWKS_URL_VARIABLE} or ${SECRET_VARIABLE}`,
      );
    }
    if (configured === SECRET_VARIABLE) readSecretText(undefined);
    if (configured === JWKS_VARIABLE) parsePublicKeys(process.env[JWKS_VARIABLE] as string);
    return () => {};
  }
  const load = () => {
    const text = readFileSync(jwksFile, 'utf8');
    parsePublicKeys(text);
    process.env[JWKS_VARIABLE] = text;
  };
  load();
  watchFile(jwksFile, { interval: KEYS_FILE_POLL_MS, persistent: false }, () => {
    try {
      load();
    } catch {
      // Half-written, or gone for a moment: the keys already loaded stay until a good file is back.
    }
  });
  return () => unwatchFile(jwksFile);
}

/** The gateway's newest key, read from its Secret (for `conformance --signing-keys`): every stored key is published. */
export async function currentSigningKey(
  client: KubeClient,
  location: { namespace: string; name: string },
): Promise<SigningKey> {
  const stored = await readStoredKeys(client, location);
  const newest = stored?.value.toSorted((a, b) => a.created - b.created).at(-1);
  if (!newest) throw new Error(`Secret ${location.namespace}/${location.name} holds no signing key`);
  return signingKeyOf(newest);
}

/**
 * How a command signs as the gateway does (explain, rbac): with its newest key from `signingKeys`, or
 * else the secret of `secretFile`; read only when a call is to be signed.
 */
export function gatewaySigner(
  client: KubeClient,
  signingKeys: { namespace: string; name: string } | undefined,
  secretFile: string | undefined,
): () => Promise<Signer> {
  return async () => {
    if (!signingKeys) return hmacSigner(readSecret(secretFile));
    const key = await currentSigningKey(client, signingKeys);
    return keySigner(() => key);
  };
}
