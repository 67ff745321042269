/**
 * Signs requests to function services with node:crypto: synchronous HMAC and SHA-256 cost a few
 * microseconds, where Web Crypto schedules a thread-pool job per operation. The claims and header
 * are protocol/trust.ts's own, and services verify the tokens with jose, so every call proves the
 * two agree.
 */
import { createHash, createHmac, createSecretKey } from 'node:crypto';
import { claimsFor, type RequestToSign, TOKEN_HEADER } from '../../protocol/index.ts';

const ENCODED_HEADER = Buffer.from(JSON.stringify(TOKEN_HEADER)).toString('base64url');

export type Signer = (request: RequestToSign) => string;

export function nodeSigner(secret: Uint8Array): Signer {
  const key = createSecretKey(secret); // prepared once: createHmac re-prepares a raw key on every call
  return (request) => {
    const digest = createHash('sha256').update(request.body).digest('base64url');
    const payload = Buffer.from(JSON.stringify(claimsFor(request, digest))).toString('base64url');
    const signature = createHmac('sha256', key).update(`${ENCODED_HEADER}.${payload}`).digest('base64url');
    return `${ENCODED_HEADER}.${payload}.${signature}`;
  };
}
