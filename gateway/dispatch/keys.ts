/**
 * The gateway's signing keys and their rotation, decided as data: which keys to keep, which one signs,
 * and when to look again. A new key is published (its public half in the JWKS the function services
 * read) for `propagationMs` before it signs, so every service knows it by its first token; the key it
 * replaces stays published until no token it signed can still be valid. No call is ever refused for a
 * rotation, and no service ever holds a private key.
 */
import {
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  type JsonWebKey,
  randomBytes,
} from 'node:crypto';
import { KEY_ALGORITHM, MAX_TOKEN_SECONDS } from '../../protocol/index.ts';
import type { SigningKey } from './signer.ts';

/** One key as kept in the gateway's Secret: the private JWK, and when it was made. */
export interface StoredKey {
  kid: string;
  /** Milliseconds since the epoch. */
  created: number;
  jwk: JsonWebKey;
}

export interface KeyTimings {
  /** A new key is made once the newest is this old. */
  rotateAfterMs: number;
  /** How long a published key waits before it signs: the time the services take to see it. */
  propagationMs: number;
}

export interface KeyPlan {
  /** The keys to keep (and publish), oldest first. */
  keys: StoredKey[];
  signing: StoredKey;
  /** Whether `keys` differs from what was stored: a write is due. */
  changed: boolean;
  /** When the plan changes next by time alone (milliseconds since the epoch). */
  next: number;
}

/** A token signed by a retired key is invalid this long after it last signed: its lifetime and the clock tolerance. */
export const RETIRE_AFTER_MS = (MAX_TOKEN_SECONDS + 5) * 1000;

export function planKeys(stored: readonly StoredKey[], now: number, timings: KeyTimings): KeyPlan {
  let keys = [...stored].sort((a, b) => a.created - b.created);
  const newest = keys.at(-1);
  const added = !newest || newest.created + timings.rotateAfterMs <= now;
  if (added) keys.push(newKey(now));
  const ready = (key: StoredKey) => key.created + timings.propagationMs <= now;
  // The very first key signs at once: there is nothing older that the services already trust.
  const signing = keys.findLast(ready) ?? (keys[0] as StoredKey);
  const signingSince = signing.created + timings.propagationMs;
  const retired = signing !== keys[0] && signingSince + RETIRE_AFTER_MS <= now;
  if (retired) keys = keys.slice(keys.indexOf(signing));
  const upcoming = [
    (keys.at(-1) as StoredKey).created + timings.rotateAfterMs,
    ...keys.filter((key) => key.created > signing.created).map((key) => key.created + timings.propagationMs),
    ...(signing !== keys[0] ? [signingSince + RETIRE_AFTER_MS] : []),
  ];
  return { keys, signing, changed: added || retired, next: Math.min(...upcoming) };
}

export function newKey(now: number): StoredKey {
  const { privateKey } = generateKeyPairSync('ed25519');
  return {
    kid: randomBytes(12).toString('base64url'),
    created: now,
    jwk: privateKey.export({ format: 'jwk' }),
  };
}

export function signingKeyOf(key: StoredKey): SigningKey {
  return { kid: key.kid, privateKey: createPrivateKey({ key: key.jwk, format: 'jwk' }) };
}

/** The JWKS the function services verify with: the public halves, nothing that signs. */
export function publicKeys(keys: readonly StoredKey[]): { keys: JsonWebKey[] } {
  return {
    keys: keys.map((key) => ({
      ...createPublicKey({ key: key.jwk, format: 'jwk' }).export({ format: 'jwk' }),
      kid: key.kid,
      alg: KEY_ALGORITHM,
      use: 'sig',
    })),
  };
}

/** The stored keys from the Secret's text, each checked: a damaged Secret is an error, not a new key. */
export function parseStoredKeys(text: string, where: string): StoredKey[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new Error(`${where}: the signing keys are not JSON: ${(error as Error).message}`);
  }
  if (!Array.isArray(parsed)) throw new Error(`${where}: the signing keys are not a list`);
  return parsed.map((entry: Partial<StoredKey>, index) => {
    if (
      typeof entry?.kid !== 'string' ||
      typeof entry.created !== 'number' ||
      entry.jwk?.crv !== 'Ed25519' ||
      !entry.jwk.d
    ) {
      throw new Error(`${where}: signing key ${index} is not {kid, created, jwk} with a private Ed25519 JWK`);
    }
    return { kid: entry.kid, created: entry.created, jwk: entry.jwk };
  });
}
