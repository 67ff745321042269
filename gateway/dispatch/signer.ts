/**
 * Signs requests to function services with node:crypto: synchronous Ed25519, HMAC and SHA-256 cost
 * microseconds, where Web Crypto schedules a thread-pool job per operation. The claims are
 * protocol/trust.ts's own, and services verify the tokens with jose, so every call proves the two agree.
 */
import { createHash, createHmac, createSecretKey, type KeyObject, sign } from 'node:crypto';
import { claimsFor, KEY_ALGORITHM, type RequestToSign, TOKEN_HEADER } from '../../protocol/index.ts';

export type Signer = (request: RequestToSign) => string;

/** One of the gateway's Ed25519 keys, by the id its public half is published under. */
export interface SigningKey {
  kid: string;
  privateKey: KeyObject;
}

const encode = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
const HMAC_HEADER = encode(TOKEN_HEADER);

/** HS256 over a secret shared with the service. */
export function hmacSigner(secret: Uint8Array): Signer {
  const key = createSecretKey(secret); // prepared once: createHmac re-prepares a raw key on every call
  return (request) => {
    const input = `${HMAC_HEADER}.${payloadOf(request)}`;
    return `${input}.${createHmac('sha256', key).update(input).digest('base64url')}`;
  };
}

/** EdDSA with whichever key `current` names at the time of the call: the keys rotate under it. */
export function keySigner(current: () => SigningKey): Signer {
  let header = { kid: '', encoded: '' };
  return (request) => {
    const { kid, privateKey } = current();
    if (header.kid !== kid) header = { kid, encoded: encode({ alg: KEY_ALGORITHM, typ: 'JWT', kid }) };
    const input = `${header.encoded}.${payloadOf(request)}`;
    return `${input}.${sign(null, Buffer.from(input), privateKey).toString('base64url')}`;
  };
}

function payloadOf(request: RequestToSign): string {
  const digest = createHash('sha256').update(request.body).digest('base64url');
  return encode(claimsFor(request, digest));
}
