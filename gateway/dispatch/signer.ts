/**
 * Signs requests to function services with node:crypto: synchronous Ed25519, HMAC and SHA-256 cost
 * microseconds, where Web Crypto schedules a thread-pool job per operation. The claims are
 * protocol/trust.ts's own, and services verify the tokens with jose, so every call proves the two agree.
 */
import { createHash, createHmac, createSecretKey, type KeyObject, randomBytes, sign } from 'node:crypto';
import {
  claimsFor,
  KEY_ALGORITHM,
  MAX_TOKEN_SECONDS,
  type RequestToSign,
  SESSION_HEADER,
  SESSION_KEY_BYTES,
  SESSION_TYPE,
  sessionClaimsFor,
  TOKEN_HEADER,
} from '../../protocol/index.ts';

/** The headers that prove a request the gateway's: its token, and the session it is signed in, if any. */
export interface Proof {
  authorization: string;
  [SESSION_HEADER]?: string;
}

/**
 * Proves a request. `inSession`: the service takes sessions (its manifest says so), so a signer with
 * keys signs the call in one rather than on its own.
 */
export type Signer = (request: RequestToSign, inSession?: boolean) => Proof;

/** One of the gateway's Ed25519 keys, by the id its public half is published under. */
export interface SigningKey {
  kid: string;
  privateKey: KeyObject;
}

const encode = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
const HMAC_HEADER = encode(TOKEN_HEADER);

/** HS256 over a secret shared with the service: as cheap as a session's calls already. */
export function hmacSigner(secret: Uint8Array): Signer {
  const key = createSecretKey(secret); // prepared once: createHmac re-prepares a raw key on every call
  return (request) => ({ authorization: `Bearer ${hmacToken(key, request)}` });
}

/**
 * EdDSA with whichever key `current` names at the time of the call: the keys rotate under it. In a
 * session, each call is signed HS256 with the session's key, and the session, signed EdDSA, comes
 * with it. A session is opened per service and lives MAX_TOKEN_SECONDS; a new one is opened halfway
 * through, or as soon as the signing key changes, so that a call never arrives with a session about
 * to expire.
 */
export function keySigner(current: () => SigningKey): Signer {
  let header = { kid: '', encoded: '' };
  const headerFor = (kid: string) => {
    if (header.kid !== kid) header = { kid, encoded: encode({ alg: KEY_ALGORITHM, typ: 'JWT', kid }) };
    return header.encoded;
  };
  const sessions = new Map<string, Session>();
  const sessionFor = (audience: string, signing: SigningKey): Session => {
    const now = Date.now();
    const open = sessions.get(audience);
    if (open && open.kid === signing.kid && now < open.renewAt) return open;
    for (const [other, { renewAt }] of sessions) if (renewAt < now) sessions.delete(other);
    const secret = randomBytes(SESSION_KEY_BYTES);
    const claims = sessionClaimsFor(audience, secret.toString('base64url'));
    const input = `${encode({ alg: KEY_ALGORITHM, typ: SESSION_TYPE, kid: signing.kid })}.${encode(claims)}`;
    const session = {
      kid: signing.kid,
      token: `${input}.${sign(null, Buffer.from(input), signing.privateKey).toString('base64url')}`,
      key: createSecretKey(secret),
      renewAt: now + (MAX_TOKEN_SECONDS * 1000) / 2,
    };
    sessions.set(audience, session);
    return session;
  };
  return (request, inSession) => {
    const signing = current();
    if (inSession) {
      const session = sessionFor(request.audience, signing);
      return { authorization: `Bearer ${hmacToken(session.key, request)}`, [SESSION_HEADER]: session.token };
    }
    const input = `${headerFor(signing.kid)}.${payloadOf(request)}`;
    return {
      authorization: `Bearer ${input}.${sign(null, Buffer.from(input), signing.privateKey).toString('base64url')}`,
    };
  };
}

interface Session {
  kid: string;
  /** The session's token: its claims, with the key, signed EdDSA. */
  token: string;
  /** What its calls are signed with. */
  key: KeyObject;
  /** When to open the next one (ms since the epoch). */
  renewAt: number;
}

function hmacToken(key: KeyObject, request: RequestToSign): string {
  const input = `${HMAC_HEADER}.${payloadOf(request)}`;
  return `${input}.${createHmac('sha256', key).update(input).digest('base64url')}`;
}

function payloadOf(request: RequestToSign): string {
  const digest = createHash('sha256').update(request.body).digest('base64url');
  return encode(claimsFor(request, digest));
}
