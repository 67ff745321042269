/**
 * On Node, a request's token and body are checked with node:crypto, taken at run time
 * (`process.getBuiltinModule`) so that this module still loads on Workers, Deno and Bun, which keep
 * jose and Web Crypto. Node's Ed25519, P-256, HMAC and SHA-256 are synchronous; Web Crypto schedules a
 * thread-pool job per operation, and jose adds its own checks around them (`npm run bench:verify`
 * measures both in one run). The checks are jose's, as trust.ts asks them:
 * algorithm, key, signature, issuer, audience, lifetime, required claims; the refusals say the same.
 */
import type { JSONWebKeySet, JWK } from 'jose';

/** The part of node:crypto this needs, typed here: protocol/ imports no Node module. */
export interface NodeCrypto {
  createHash(algorithm: 'sha256'): { update(data: Uint8Array): { digest(encoding: 'base64url'): string } };
  createHmac(algorithm: 'sha256', key: object): { update(data: Uint8Array): { digest(): Uint8Array } };
  createSecretKey(key: Uint8Array): object;
  createPublicKey(key: { key: JWK; format: 'jwk' }): object;
  verify(
    algorithm: 'sha256' | null,
    data: Uint8Array,
    key: object | { key: object; dsaEncoding: 'ieee-p1363' },
    signature: Uint8Array,
  ): boolean;
  timingSafeEqual(a: Uint8Array, b: Uint8Array): boolean;
}

/** node:buffer's decoding, much faster than atob for the signature and the JSON of a token. */
export interface NodeBuffer {
  from(text: string, encoding: 'base64url'): Uint8Array;
}

/** What the Node checker works with: node:crypto and node:buffer's Buffer. */
export type NodeRuntime = NodeCrypto & { Buffer: NodeBuffer };

/** node:crypto on Node itself (not on a runtime that emulates it), with its Buffer; undefined elsewhere. */
export const nodeCrypto: NodeRuntime | undefined = (() => {
  const runtime = (globalThis as { navigator?: { userAgent?: string } }).navigator?.userAgent ?? '';
  const host = (globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } }).process;
  if (!runtime.startsWith('Node.js/') || typeof host?.getBuiltinModule !== 'function') return undefined;
  const { Buffer } = host.getBuiltinModule('node:buffer') as { Buffer: NodeBuffer };
  return { ...(host.getBuiltinModule('node:crypto') as NodeCrypto), Buffer };
})();

/** Why a token is refused, as jose would have it: trust.ts words each for the operator. */
export type Refusal =
  | { reason: 'malformed'; detail: string }
  | { reason: 'algorithm' }
  | { reason: 'unknown-key' }
  | { reason: 'signature' }
  | { reason: 'missing'; claim: string }
  | { reason: 'invalid'; claim: string; detail: string }
  | { reason: 'type' }
  | { reason: 'issuer' }
  | { reason: 'audience' }
  | { reason: 'future' }
  | { reason: 'too-old' }
  | { reason: 'expired' };

export class Refused extends Error {
  readonly refusal: Refusal;
  constructor(refusal: Refusal) {
    super(refusal.reason);
    this.refusal = refusal;
  }
}

export interface TokenChecks {
  algorithms: readonly string[];
  issuer: string;
  audience: string;
  clockToleranceS: number;
  maxAgeS: number;
  requiredClaims: readonly string[];
  /** The `typ` the header must carry (as jose compares it: case aside, `application/` implied). */
  type?: string;
}

const secretKeys = new WeakMap<Uint8Array, object>();
const publicKeys = new WeakMap<JSONWebKeySet, Map<string, { key: object; algorithm: string }>>();

/** The token's claims once every check passes; throws Refused otherwise. */
export function verifyWithNode(
  crypto: NodeRuntime,
  token: string,
  keys: Uint8Array | JSONWebKeySet,
  checks: TokenChecks,
): Record<string, unknown> {
  const parts = token.split('.');
  if (parts.length !== 3) throw new Refused({ reason: 'malformed', detail: 'Invalid Compact JWS' });
  const [encodedHeader, encodedPayload, encodedSignature] = parts as [string, string, string];
  const decode = (part: string) => {
    if (!/^[A-Za-z0-9_-]*$/.test(part))
      throw new Refused({ reason: 'malformed', detail: 'Invalid base64url' });
    return crypto.Buffer.from(part, 'base64url');
  };
  const header = decodeJson(decode(encodedHeader), 'protected header');
  const algorithm = header.alg;
  if (typeof algorithm !== 'string') {
    throw new Refused({
      reason: 'malformed',
      detail: 'JWS "alg" (Algorithm) Header Parameter missing or invalid',
    });
  }
  // Extensions this checker does not understand make jose refuse a token; so they do here.
  if ('crit' in header || 'b64' in header) {
    throw new Refused({ reason: 'malformed', detail: 'Extension Header Parameters are not supported' });
  }
  if (!checks.algorithms.includes(algorithm)) throw new Refused({ reason: 'algorithm' });
  const signed = new TextEncoder().encode(`${encodedHeader}.${encodedPayload}`);
  const signature = decode(encodedSignature);
  if (!signatureHolds(crypto, algorithm, header.kid, keys, signed, signature)) {
    throw new Refused({ reason: 'signature' });
  }
  const claims = decodeJson(decode(encodedPayload), 'payload');
  if (checks.type !== undefined && !sameType(header.typ, checks.type)) throw new Refused({ reason: 'type' });
  checkClaims(claims, checks);
  return claims;
}

/** SHA-256 of the body, base64url, as trust.ts's bodyDigest gives it. */
export function digestWithNode(crypto: NodeCrypto, body: Uint8Array): string {
  return crypto.createHash('sha256').update(body).digest('base64url');
}

function signatureHolds(
  crypto: NodeCrypto,
  algorithm: string,
  kid: unknown,
  keys: Uint8Array | JSONWebKeySet,
  signed: Uint8Array,
  signature: Uint8Array,
): boolean {
  if (keys instanceof Uint8Array) {
    let key = secretKeys.get(keys);
    if (!key) {
      key = crypto.createSecretKey(keys);
      secretKeys.set(keys, key);
    }
    const expected = crypto.createHmac('sha256', key).update(signed).digest();
    return expected.byteLength === signature.byteLength && crypto.timingSafeEqual(expected, signature);
  }
  const key = publicKeyOf(crypto, keys, kid, algorithm);
  if (algorithm === 'ES256')
    return crypto.verify('sha256', signed, { key, dsaEncoding: 'ieee-p1363' }, signature);
  return crypto.verify(null, signed, key, signature);
}

/** The key of the set that `kid` names (or the only one, without a kid) for `algorithm`, imported once. */
function publicKeyOf(crypto: NodeCrypto, set: JSONWebKeySet, kid: unknown, algorithm: string): object {
  let imported = publicKeys.get(set);
  if (!imported) {
    imported = new Map();
    for (const jwk of set.keys) {
      const keyAlgorithm = jwk.kty === 'EC' ? 'ES256' : 'EdDSA';
      imported.set(String(jwk.kid), {
        key: crypto.createPublicKey({ key: jwk as JWK, format: 'jwk' }),
        algorithm: keyAlgorithm,
      });
    }
    publicKeys.set(set, imported);
  }
  const fitting = (entry: { algorithm: string } | undefined) =>
    entry !== undefined &&
    (entry.algorithm === algorithm || (algorithm === 'Ed25519' && entry.algorithm === 'EdDSA'));
  const named = typeof kid === 'string' ? imported.get(kid) : undefined;
  if (typeof kid === 'string') {
    if (!named || !fitting(named)) throw new Refused({ reason: 'unknown-key' });
    return named.key;
  }
  const candidates = [...imported.values()].filter(fitting);
  if (candidates.length !== 1) throw new Refused({ reason: 'unknown-key' });
  return (candidates[0] as { key: object }).key;
}

function sameType(typ: unknown, expected: string): boolean {
  const normal = (value: string) => value.toLowerCase().replace(/^application\//, '');
  return typeof typ === 'string' && normal(typ) === normal(expected);
}

/** jose's order: required claims, issuer, audience (a missing one refused as another), then the times. */
function checkClaims(claims: Record<string, unknown>, checks: TokenChecks): void {
  for (const claim of new Set([...checks.requiredClaims, 'iat'])) {
    if (!(claim in claims)) throw new Refused({ reason: 'missing', claim });
  }
  if (claims.iss !== checks.issuer) throw new Refused({ reason: 'issuer' });
  const audiences = Array.isArray(claims.aud) ? claims.aud : [claims.aud];
  if (!audiences.includes(checks.audience)) throw new Refused({ reason: 'audience' });
  for (const claim of ['iat', 'nbf', 'exp']) {
    if (claim in claims && typeof claims[claim] !== 'number') {
      throw new Refused({ reason: 'invalid', claim, detail: `"${claim}" claim must be a number` });
    }
  }
  const now = Math.floor(Date.now() / 1000);
  const tolerance = checks.clockToleranceS;
  if (typeof claims.nbf === 'number' && claims.nbf > now + tolerance) {
    throw new Refused({ reason: 'invalid', claim: 'nbf', detail: '"nbf" claim timestamp check failed' });
  }
  if (typeof claims.exp === 'number' && claims.exp <= now - tolerance)
    throw new Refused({ reason: 'expired' });
  const age = now - (claims.iat as number);
  if (age - tolerance > checks.maxAgeS) throw new Refused({ reason: 'too-old' });
  if (age < -tolerance) throw new Refused({ reason: 'future' });
}

function decodeJson(bytes: Uint8Array, what: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(new TextDecoder().decode(bytes));
  } catch {
    throw new Refused({ reason: 'malformed', detail: `Invalid JWS ${what}` });
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new Refused({ reason: 'malformed', detail: `JWS ${what} must be a JSON object` });
  }
  return parsed as Record<string, unknown>;
}
