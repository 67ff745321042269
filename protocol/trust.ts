/**
 * How the gateway proves to a function service that a request is its own, fresh and untouched:
 * a JWT bound to the service (audience), the request (method and path) and the exact body bytes
 * (SHA-256). Signed with the gateway's Ed25519 key (EdDSA), which the services check against its
 * public keys (a JWKS): then no service holds anything able to sign. Or, the simple option, HS256
 * over a secret the gateway shares with that one service. jose and Web Crypto, so it runs on every
 * runtime; on Node, node:crypto checks the same things for less CPU (node-verify.ts).
 */
import {
  base64url,
  createLocalJWKSet,
  createRemoteJWKSet,
  errors,
  type JSONWebKeySet,
  type JWTVerifyGetKey,
  jwtVerify,
  SignJWT,
} from 'jose';
import {
  digestWithNode,
  type NodeRuntime,
  nodeCrypto,
  type Refusal,
  Refused,
  verifyWithNode,
} from './node-verify.ts';

export const ISSUER = 'causeway-gateway';
/** The environment variable in which the gateway and a function service find their shared secret. */
export const SECRET_VARIABLE = 'CAUSEWAY_SECRET';
/** The environment variable holding the gateway's public keys, as JWKS text. */
export const JWKS_VARIABLE = 'CAUSEWAY_JWKS';
/** The environment variable holding a URL that serves the gateway's public keys as a JWKS. */
export const JWKS_URL_VARIABLE = 'CAUSEWAY_JWKS_URL';
/** The algorithm of the gateway's keys: Ed25519 signatures. */
export const KEY_ALGORITHM = 'EdDSA';
/** Tokens may live at most this long; the gateway signs for less. */
export const MAX_TOKEN_SECONDS = 60;
export const DEFAULT_TOKEN_SECONDS = 30;
const CLOCK_TOLERANCE_SECONDS = 5;
/**
 * The header that carries a session: a key for HS256, vouched for by the gateway's signature, under
 * which the calls that come with it are signed (see `SessionClaims`).
 */
export const SESSION_HEADER = 'causeway-session';
/** The `typ` of a session's token, so that no call's token passes for a session, nor a session for a call. */
export const SESSION_TYPE = 'causeway-session+jwt';
/** Bytes of a session's key. */
export const SESSION_KEY_BYTES = 32;
const MIN_SECRET_BYTES = 32;

export interface RequestToSign {
  audience: string;
  method: string;
  path: string;
  body: Uint8Array;
}

export interface SignedClaims {
  iss: string;
  aud: string;
  iat: number;
  exp: number;
  jti: string;
  /** HTTP method and path, e.g. `POST /causeway/v1/invoke`. */
  req: string;
  /** base64url SHA-256 of the body bytes. */
  bsh: string;
}

/**
 * A session: the gateway signs, with its Ed25519 key, a fresh random `key` (base64url) for one service
 * (audience) and at most MAX_TOKEN_SECONDS; each call that carries the session is signed HS256 with
 * that key, over the same claims as a token of its own. A service checks the Ed25519 signature once
 * per session instead of once per call (an HMAC costs a twentieth of it), and remembers nothing it
 * could not check again: every call carries its session, so any replica, or any isolate, takes it.
 * The key travels inside the request, as the body does, which is why services are reached over TLS
 * and never log the header. Services declare that they take sessions (`Manifest.sessions`).
 */
export interface SessionClaims {
  iss: string;
  aud: string;
  iat: number;
  exp: number;
  key: string;
}

/** Whether `hostname` (as URL.hostname gives it) is this host: the one place plain HTTP crosses no network. */
export function isLoopback(hostname: string): boolean {
  return /^(localhost|127\.\d+\.\d+\.\d+|\[::1\])$/.test(hostname);
}

/** Why a request was refused, in words an operator can act on. */
/** Why a request was refused, in a word from a short list (a metric's label stays bounded). */
export type RefusalReason =
  | Refusal['reason']
  | 'unsigned'
  | 'route'
  | 'lifetime'
  | 'session'
  | 'body'
  | 'replay'
  | 'too-large';

/** What cannot be trusted; `reason` when it is a request refused, not a service's own settings. */
export class TrustError extends Error {
  override name = 'TrustError';
  readonly reason: RefusalReason | undefined;

  constructor(message: string, reason?: RefusalReason) {
    super(message);
    this.reason = reason;
  }
}

export function encodeSecret(secret: string | Uint8Array): Uint8Array {
  const bytes = typeof secret === 'string' ? new TextEncoder().encode(secret) : secret;
  if (bytes.byteLength < MIN_SECRET_BYTES) {
    throw new TrustError(`the signing secret must be at least ${MIN_SECRET_BYTES} bytes long`);
  }
  return bytes;
}

/** Imported HMAC keys by secret: importing is an async Web Crypto job per call, costly at hundreds of calls a second. */
type HmacKey = Awaited<ReturnType<typeof crypto.subtle.importKey>>;
const keys = new Map<string, Promise<HmacKey>>();
const MAX_CACHED_KEYS = 16;

function hmacKey(secret: Uint8Array): Promise<HmacKey> {
  const id = String.fromCharCode(...secret);
  let key = keys.get(id);
  if (!key) {
    if (keys.size >= MAX_CACHED_KEYS) keys.clear(); // secrets rotate rarely; never let a stream of them grow this
    key = crypto.subtle.importKey(
      'raw',
      secret as Uint8Array<ArrayBuffer>,
      { name: 'HMAC', hash: 'SHA-256' },
      false,
      ['sign', 'verify'],
    );
    keys.set(id, key);
  }
  return key;
}

/**
 * The `node` of the checks below: node:crypto on Node. Given null, they check with jose and Web Crypto
 * as every other runtime does, whatever runs them (bench:verify measures both); an argument given as
 * undefined takes this default.
 */
const NODE_BY_DEFAULT: NodeRuntime | null = nodeCrypto ?? null;

/** The SHA-256 of the body, base64url: with node:crypto on Node (`node`), else Web Crypto. */
export async function bodyDigest(
  body: Uint8Array,
  node: NodeRuntime | null = NODE_BY_DEFAULT,
): Promise<string> {
  if (node) return digestWithNode(node, body);
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', body as Uint8Array<ArrayBuffer>));
  let binary = '';
  for (const byte of digest) binary += String.fromCharCode(byte);
  return btoa(binary).replaceAll('+', '-').replaceAll('/', '_').replace(/=+$/, '');
}

export const TOKEN_HEADER = { alg: 'HS256', typ: 'JWT' } as const;

/** The claims of a token for `request`, given the digest of its body: the one definition every signer uses. */
export function claimsFor(
  request: RequestToSign,
  digest: string,
  ttlSeconds = DEFAULT_TOKEN_SECONDS,
): SignedClaims {
  if (ttlSeconds > MAX_TOKEN_SECONDS)
    throw new TrustError(`token lifetime is capped at ${MAX_TOKEN_SECONDS}s`);
  const now = Math.floor(Date.now() / 1000);
  return {
    iss: ISSUER,
    aud: request.audience,
    iat: now,
    exp: now + ttlSeconds,
    jti: crypto.randomUUID(),
    req: `${request.method} ${request.path}`,
    bsh: digest,
  };
}

/** The claims of a session for `audience` under `key` (base64url), living `ttlSeconds`. */
export function sessionClaimsFor(
  audience: string,
  key: string,
  ttlSeconds = MAX_TOKEN_SECONDS,
): SessionClaims {
  if (ttlSeconds > MAX_TOKEN_SECONDS)
    throw new TrustError(`a session's lifetime is capped at ${MAX_TOKEN_SECONDS}s`);
  const now = Math.floor(Date.now() / 1000);
  return { iss: ISSUER, aud: audience, iat: now, exp: now + ttlSeconds, key };
}

/** Signs with Web Crypto, so it runs anywhere; the gateway has a faster Node signer for the same claims. */
export async function signRequest(
  secret: Uint8Array,
  request: RequestToSign,
  ttlSeconds = DEFAULT_TOKEN_SECONDS,
): Promise<string> {
  const claims = claimsFor(request, await bodyDigest(request.body), ttlSeconds);
  return new SignJWT({ ...claims }).setProtectedHeader(TOKEN_HEADER).sign(await hmacKey(secret));
}

/**
 * Where a function service remembers the token ids it admitted, until they expire, so that a
 * captured request cannot be sent again. The replicas of one service must share one store, and its
 * `admit` must be atomic across them (a Redis `SET jti 1 NX EXAT exp`, a Durable Object on Workers;
 * not Workers KV, which is eventually consistent): with a store per replica, a request captured on
 * its way to one replica can be replayed to another within the token's lifetime.
 */
export interface ReplayStore {
  /** True, remembering `jti` until `exp` (seconds since the epoch), when it was not seen before; false for a replay. */
  admit(jti: string, exp: number): boolean | Promise<boolean>;
}

/**
 * Ids a ReplayGuard keeps at most by default: about 12 MiB of heap, every id of 30 s tokens up to
 * 2,700 calls/s (`npm run bench:replay-guard`, docs/reliability.md).
 */
export const DEFAULT_MAX_REPLAY_IDS = 100_000;

export interface ReplayGuardOptions {
  /** Ids kept at most: when full, the oldest is forgotten (see ReplayGuard). */
  maxIds?: number;
  /** Seconds since the epoch; the clock, for tests. */
  now?: () => number;
}

/**
 * The default store: this process's memory, so one replica's. It keeps `maxIds` ids at most, so that
 * its memory does not grow with the call rate: when full, it forgets the oldest, and from then on
 * refuses every token that expires no later than one it forgot, as it could no longer tell a replay of
 * it. A gateway's calls at a rate that fills it before their tokens expire are refused (401) and
 * retried, rather than the guard growing without bound.
 */
export class ReplayGuard implements ReplayStore {
  readonly #seen = new Map<string, number>();
  readonly #maxIds: number;
  readonly #now: () => number;
  /** The latest expiry among the ids forgotten before they expired. */
  #forgottenUntil = Number.NEGATIVE_INFINITY;

  constructor({ maxIds = DEFAULT_MAX_REPLAY_IDS, now = () => Date.now() / 1000 }: ReplayGuardOptions = {}) {
    if (!(Number.isInteger(maxIds) && maxIds > 0))
      throw new RangeError(`maxIds must be a positive integer, not ${maxIds}`);
    this.#maxIds = maxIds;
    this.#now = now;
  }

  /** Ids kept now. */
  get size(): number {
    return this.#seen.size;
  }

  /** Returns false when the id was already used, or expires no later than an id forgotten. */
  admit(jti: string, exp: number): boolean {
    const now = Math.floor(this.#now());
    for (const [id, until] of this.#seen) {
      if (until + CLOCK_TOLERANCE_SECONDS < now) this.#seen.delete(id);
      else break; // insertion order ≈ expiry order: the rest are younger
    }
    if (exp <= this.#forgottenUntil || this.#seen.has(jti)) return false;
    if (this.#seen.size >= this.#maxIds) {
      const [oldest, until] = this.#seen.entries().next().value as [string, number];
      this.#seen.delete(oldest);
      this.#forgottenUntil = Math.max(this.#forgottenUntil, until);
      if (exp <= this.#forgottenUntil) return false;
    }
    this.#seen.set(jti, exp);
    return true;
  }
}

/**
 * What a function service checks tokens against: the secret it shares with the gateway (HS256), the
 * gateway's public keys, or a URL serving them (EdDSA; fetched again when a token names a key not
 * seen yet, at most every 30 s). A token signed any other way is refused: no HS256 token passes
 * against public keys, whatever its bytes.
 */
export type VerificationKeys = Uint8Array | JSONWebKeySet | URL;

/**
 * Public keys from JWKS text, checked: each an Ed25519 or P-256 key with a `kid`, and none private,
 * since a function service must hold nothing able to sign.
 */
export function parsePublicKeys(text: string): JSONWebKeySet {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new TrustError(`the gateway's public keys are not JSON: ${(error as Error).message}`);
  }
  const keys = (parsed as { keys?: unknown })?.keys;
  if (!Array.isArray(keys) || keys.length === 0) {
    throw new TrustError(
      'the gateway\'s public keys are not a JWKS: expected {"keys": [ ... ]} with at least one key',
    );
  }
  for (const key of keys as Array<Record<string, unknown>>) {
    const known = (key?.kty === 'OKP' && key.crv === 'Ed25519') || (key?.kty === 'EC' && key.crv === 'P-256');
    if (!known || typeof key.kid !== 'string') {
      throw new TrustError(
        'each of the gateway\'s public keys must be an Ed25519 (OKP) or P-256 (EC) key with a "kid"',
      );
    }
    if ('d' in key) {
      throw new TrustError(
        `the key "${key.kid}" is a private key: give function services the public keys only, never what signs`,
      );
    }
  }
  return parsed as JSONWebKeySet;
}

const localKeySets = new WeakMap<JSONWebKeySet, JWTVerifyGetKey>();
const remoteKeySets = new Map<string, JWTVerifyGetKey>();
const PUBLIC_KEY_ALGORITHMS = [KEY_ALGORITHM, 'Ed25519', 'ES256'];

/** The key to check a token with, and the algorithms it may claim. */
function verificationKey(keys: VerificationKeys): {
  key: Promise<HmacKey> | JWTVerifyGetKey;
  algorithms: string[];
} {
  if (keys instanceof Uint8Array) return { key: hmacKey(keys), algorithms: ['HS256'] };
  if (keys instanceof URL) {
    let set = remoteKeySets.get(keys.href);
    if (!set) {
      if (remoteKeySets.size >= MAX_CACHED_KEYS) remoteKeySets.clear();
      set = createRemoteJWKSet(keys);
      remoteKeySets.set(keys.href, set);
    }
    return { key: set, algorithms: PUBLIC_KEY_ALGORITHMS };
  }
  let set = localKeySets.get(keys);
  if (!set) {
    set = createLocalJWKSet(keys);
    localKeySets.set(keys, set);
  }
  return { key: set, algorithms: PUBLIC_KEY_ALGORITHMS };
}

/** Verifies a request as a whole: its token (in its session, if it came with one), then its body, then that it is no replay. */
export async function verifyRequest(
  keys: VerificationKeys,
  authorization: string | null | undefined,
  request: RequestToSign,
  replays: ReplayStore,
  session?: string | null,
): Promise<SignedClaims> {
  const claims = await verifyToken(keys, authorization, request, session);
  await verifyBody(claims, request.body, replays);
  return claims;
}

/**
 * The token alone, before the body is read: a request nobody signed for this service and route is
 * refused before its body costs anything. With `session` (the SESSION_HEADER's value), the token is
 * checked against the session's key, once the session holds.
 */
export async function verifyToken(
  keys: VerificationKeys,
  authorization: string | null | undefined,
  request: Omit<RequestToSign, 'body'>,
  session?: string | null,
  node: NodeRuntime | null = NODE_BY_DEFAULT,
): Promise<SignedClaims> {
  const token = /^Bearer\s+(\S+)$/i.exec(authorization ?? '')?.[1];
  if (!token)
    throw new TrustError(
      'unsigned request: expected "Authorization: Bearer <token>" from the gateway',
      'unsigned',
    );
  const claims = session
    ? await tokenClaims(
        await sessionKey(keys, session, request.audience, node ?? undefined),
        token,
        request.audience,
        node ?? undefined,
        'in-session',
      )
    : await tokenClaims(keys, token, request.audience, node ?? undefined);
  const expected = `${request.method} ${request.path}`;
  if (claims.req !== expected)
    throw new TrustError(`token was signed for "${claims.req}", not "${expected}"`, 'route');
  return claims;
}

interface OpenSession {
  keys: VerificationKeys;
  audience: string;
  exp: number;
  key: Uint8Array;
}

/** Sessions checked, by their token: the signature is checked once, the lifetime at every call. */
const sessions = new Map<string, OpenSession>();
/** A gateway opens a session per service every 30 s or so: this holds many gateways' worth. */
const MAX_SESSIONS = 256;

/** The key of the session `session` (its token) for `audience`, once its signature, claims and lifetime hold. */
async function sessionKey(
  keys: VerificationKeys,
  session: string,
  audience: string,
  node: NodeRuntime | undefined,
): Promise<Uint8Array> {
  if (keys instanceof Uint8Array) {
    throw new TrustError(
      'this service checks HS256 with a secret it shares with the gateway: it takes no session',
      'session',
    );
  }
  const now = Math.floor(Date.now() / 1000);
  const known = sessions.get(session);
  if (known && sameKeys(known.keys, keys) && known.audience === audience) {
    if (known.exp <= now - CLOCK_TOLERANCE_SECONDS) throw new TrustError('session expired', 'expired');
    return known.key;
  }
  const claims = (await tokenClaims(keys, session, audience, node, 'session')) as unknown as SessionClaims;
  const key = typeof claims.key === 'string' ? decodeKey(claims.key) : undefined;
  if (key?.byteLength !== SESSION_KEY_BYTES) {
    throw new TrustError(`session claim "key" is not ${SESSION_KEY_BYTES} bytes in base64url`, 'session');
  }
  if (sessions.size >= MAX_SESSIONS) {
    for (const [id, open] of sessions) if (open.exp + CLOCK_TOLERANCE_SECONDS < now) sessions.delete(id);
    if (sessions.size >= MAX_SESSIONS) sessions.delete(sessions.keys().next().value as string);
  }
  sessions.set(session, { keys, audience, exp: claims.exp, key });
  return key;
}

function sameKeys(a: VerificationKeys, b: VerificationKeys): boolean {
  return a === b || (a instanceof URL && b instanceof URL && a.href === b.href);
}

function decodeKey(text: string): Uint8Array | undefined {
  try {
    return base64url.decode(text);
  } catch {
    return undefined; // not base64url: refused as a key of the wrong size
  }
}

/**
 * What a token is checked as: a call's own (`call`), signed with the gateway's key or shared secret;
 * a session's (`session`); or a call's in a session (`in-session`), signed with the session's key.
 */
export type TokenRole = 'call' | 'session' | 'in-session';

/**
 * The token's claims once its algorithm, key, signature, issuer, audience and times hold; a TrustError
 * that says which does not otherwise. With `node` (node:crypto, on Node) for public keys given and
 * shared secrets; with jose and Web Crypto for the rest, and everywhere else. Both word a refusal alike.
 */
export async function tokenClaims(
  keys: VerificationKeys,
  token: string,
  audience: string,
  node: NodeRuntime | undefined,
  role: TokenRole = 'call',
): Promise<SignedClaims> {
  const checks = {
    issuer: ISSUER,
    audience,
    clockToleranceS: CLOCK_TOLERANCE_SECONDS,
    maxAgeS: MAX_TOKEN_SECONDS, // and an iat in the future is refused
    requiredClaims: role === 'session' ? ['iat', 'exp', 'key'] : ['iat', 'exp', 'jti', 'req', 'bsh'],
    ...(role === 'session' ? { type: SESSION_TYPE } : {}),
  };
  let claims: SignedClaims;
  if (node && !(keys instanceof URL)) {
    const algorithms = keys instanceof Uint8Array ? ['HS256'] : PUBLIC_KEY_ALGORITHMS;
    try {
      claims = verifyWithNode(node, token, keys, { ...checks, algorithms }) as unknown as SignedClaims;
    } catch (error) {
      if (!(error instanceof Refused)) throw error;
      throw new TrustError(describeRefusal(error.refusal, audience, algorithms, role), error.refusal.reason);
    }
  } else {
    const { key, algorithms } = verificationKey(keys);
    try {
      const verified = await jwtVerify<SignedClaims>(token, typeof key === 'function' ? key : await key, {
        algorithms,
        issuer: checks.issuer,
        audience: checks.audience,
        clockTolerance: checks.clockToleranceS,
        maxTokenAge: checks.maxAgeS,
        requiredClaims: checks.requiredClaims,
        ...(checks.type ? { typ: checks.type } : {}),
      });
      claims = verified.payload;
    } catch (error) {
      if (isKeySetFailure(error)) throw error; // the service cannot fetch its keys: its own fault, not the caller's
      const refusal = refusalOf(error);
      throw new TrustError(describeRefusal(refusal, audience, algorithms, role), refusal.reason);
    }
  }
  if (claims.exp - claims.iat > MAX_TOKEN_SECONDS) {
    throw new TrustError(
      `${role === 'session' ? 'session' : 'token'} lifetime ${claims.exp - claims.iat}s exceeds the ${MAX_TOKEN_SECONDS}s limit`,
      'lifetime',
    );
  }
  return claims;
}

/** The body against the token's digest, then the token's id against those seen. */
export async function verifyBody(
  claims: SignedClaims,
  body: Uint8Array,
  replays: ReplayStore,
  node: NodeRuntime | null = NODE_BY_DEFAULT,
): Promise<void> {
  if (claims.bsh !== (await bodyDigest(body, node))) {
    throw new TrustError('body does not match the signed digest: the request was altered', 'body');
  }
  if (!(await replays.admit(claims.jti, claims.exp)))
    throw new TrustError('token was already used: replayed request', 'replay');
}

function isKeySetFailure(error: unknown): boolean {
  return (
    error instanceof errors.JWKSTimeout ||
    error instanceof errors.JWKSInvalid ||
    (error instanceof Error && !(error instanceof errors.JOSEError))
  );
}

/** A jose error as the refusal it stands for, so that both checkers are worded by `describeRefusal`. */
function refusalOf(error: unknown): Refusal {
  if (error instanceof errors.JWTExpired) return { reason: error.claim === 'iat' ? 'too-old' : 'expired' };
  if (error instanceof errors.JWTClaimValidationFailed) {
    if (error.claim === 'typ') return { reason: 'type' };
    if (error.claim === 'aud') return { reason: 'audience' };
    if (error.claim === 'iss') return { reason: 'issuer' };
    if (error.claim === 'iat' && error.reason === 'check_failed') return { reason: 'future' };
    if (error.reason === 'missing') return { reason: 'missing', claim: error.claim };
    return { reason: 'invalid', claim: error.claim, detail: error.message };
  }
  if (error instanceof errors.JWSSignatureVerificationFailed) return { reason: 'signature' };
  if (error instanceof errors.JOSEAlgNotAllowed) return { reason: 'algorithm' };
  if (error instanceof errors.JWKSNoMatchingKey) return { reason: 'unknown-key' };
  return { reason: 'malformed', detail: error instanceof Error ? error.message : String(error) };
}

function describeRefusal(
  refusal: Refusal,
  audience: string,
  algorithms: readonly string[],
  role: TokenRole,
): string {
  const noun = role === 'session' ? 'session' : 'token';
  const signedWith =
    role === 'in-session'
      ? 'the key of the session it came with'
      : algorithms.includes('HS256')
        ? 'the secret this service shares with the gateway'
        : "the gateway's key";
  switch (refusal.reason) {
    case 'too-old':
      return `${noun} issued more than ${MAX_TOKEN_SECONDS}s ago`;
    case 'expired':
      return `${noun} expired`;
    case 'audience':
      return `${noun} is for another audience, not "${audience}"`;
    case 'issuer':
      return `${noun} is not from the gateway: its issuer is not "${ISSUER}"`;
    case 'future':
      return `${noun} issued in the future: the clocks of gateway and service differ by more than ${CLOCK_TOLERANCE_SECONDS}s`;
    case 'missing':
      return `${noun} has no "${refusal.claim}" claim`;
    case 'invalid':
      return `${noun} claim "${refusal.claim}" is invalid: ${refusal.detail}`;
    case 'type':
      return `not a session: its header's "typ" is not "${SESSION_TYPE}"`;
    case 'signature':
      return `bad ${role === 'session' ? "session's " : ''}signature: not signed with ${signedWith}`;
    case 'algorithm':
      if (role === 'in-session') return "a call in a session is signed HS256 with the session's key";
      return algorithms.includes('HS256')
        ? 'the token is signed with a public-key algorithm, but this service checks HS256 with a shared secret'
        : `the ${noun} is not signed with a public-key algorithm this service accepts (EdDSA, ES256): an HS256 token, for a service with a shared secret`;
    case 'unknown-key':
      return `${noun} signed with a key this service does not know: its copy of the gateway's public keys is out of date, or the ${noun} is not the gateway's`;
    case 'malformed':
      return `malformed ${noun}: ${refusal.detail}`;
  }
}
