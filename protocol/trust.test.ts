/**
 * The two token checkers, node:crypto's (on Node) and jose's (everywhere else), held to one another:
 * every token, good or bad in each way a gateway or an attacker could make it, gets the same claims
 * or the same refusal from both.
 */
import assert from 'node:assert/strict';
import { generateKeyPairSync, randomUUID, sign } from 'node:crypto';
import { describe, it, type TestContext } from 'node:test';
import { type JWK, SignJWT } from 'jose';
import { nodeCrypto } from './node-verify.ts';
import {
  ISSUER,
  ReplayGuard,
  SESSION_TYPE,
  signRequest,
  type TokenRole,
  TrustError,
  tokenClaims,
  verifyBody,
  verifyToken,
} from './trust.ts';

const ed = generateKeyPairSync('ed25519');
const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const other = generateKeyPairSync('ed25519');
const jwks = {
  keys: [
    { ...(ed.publicKey.export({ format: 'jwk' }) as JWK), kid: 'ed-1' },
    { ...(ec.publicKey.export({ format: 'jwk' }) as JWK), kid: 'ec-1' },
  ],
};
const secret = new TextEncoder().encode('a secret shared with one service, 32+ bytes long');
const AUDIENCE = 'billing';

interface Token {
  alg?: 'EdDSA' | 'ES256' | 'HS256';
  kid?: string;
  claims?: Record<string, unknown>;
  /** Claims to leave out. */
  without?: string[];
  /** Signed with another Ed25519 key than the one its kid names. */
  forged?: boolean;
  typ?: string;
}

async function token({
  alg = 'EdDSA',
  kid,
  claims = {},
  without = [],
  forged,
  typ = 'JWT',
}: Token): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  const payload: Record<string, unknown> = {
    iss: ISSUER,
    aud: AUDIENCE,
    iat: now,
    exp: now + 30,
    jti: randomUUID(),
    req: 'POST /causeway/v1/invoke',
    bsh: 'digest',
    ...claims,
  };
  for (const claim of without) delete payload[claim];
  const key =
    alg === 'HS256' ? secret : alg === 'ES256' ? ec.privateKey : forged ? other.privateKey : ed.privateKey;
  const defaultKid = alg === 'HS256' ? undefined : alg === 'ES256' ? 'ec-1' : 'ed-1';
  return new SignJWT(payload)
    .setProtectedHeader({
      alg,
      typ,
      ...((kid ?? defaultKid) ? { kid: kid ?? defaultKid } : {}),
    })
    .sign(key);
}

/** A session's token: its type, a key, and none of a call's claims. */
function session(change: Token): Promise<string> {
  return token({
    typ: SESSION_TYPE,
    ...change,
    claims: { key: Buffer.alloc(32, 7).toString('base64url'), ...change.claims },
    without: ['jti', 'req', 'bsh', ...(change.without ?? [])],
  });
}

/** What a checker makes of a token: its claims, or its refusal's words. */
async function outcome(keys: typeof jwks | Uint8Array, text: string, withNode: boolean, role: TokenRole) {
  try {
    return { claims: await tokenClaims(keys, text, AUDIENCE, withNode ? nodeCrypto : undefined, role) };
  } catch (error) {
    assert.ok(error instanceof TrustError, `a TrustError, not ${error}`);
    return { refusal: error.message };
  }
}

const now = () => Math.floor(Date.now() / 1000);

describe('the token checkers, on Node and elsewhere', () => {
  it('run on Node with node:crypto', () => {
    assert.ok(nodeCrypto, 'node:crypto is taken on Node');
  });

  const cases: Array<[string, () => Promise<string>, typeof jwks | Uint8Array, RegExp, TokenRole?]> = [
    ['an EdDSA token', () => token({}), jwks, /^$/],
    ['an ES256 token', () => token({ alg: 'ES256' }), jwks, /^$/],
    ['an HS256 token, to a service with the secret', () => token({ alg: 'HS256' }), secret, /^$/],
    [
      'an expired token',
      () => token({ claims: { iat: now() - 100, exp: now() - 50 } }),
      jwks,
      /^token expired$/,
    ],
    [
      'a token issued too long ago',
      () => token({ claims: { iat: now() - 70 } }),
      jwks,
      /issued more than 60s ago/,
    ],
    [
      'a token issued in the future',
      () => token({ claims: { iat: now() + 60, exp: now() + 80 } }),
      jwks,
      /in the future/,
    ],
    ['a token for another service', () => token({ claims: { aud: 'other' } }), jwks, /another audience/],
    [
      'a token for several, this one among them',
      () => token({ claims: { aud: ['other', AUDIENCE] } }),
      jwks,
      /^$/,
    ],
    [
      'a token not from the gateway',
      () => token({ claims: { iss: 'someone' } }),
      jwks,
      /not from the gateway/,
    ],
    ['a token without an id', () => token({ without: ['jti'] }), jwks, /has no "jti" claim/],
    ['a token without an issuer', () => token({ without: ['iss'] }), jwks, /not from the gateway/],
    ['a token without an audience', () => token({ without: ['aud'] }), jwks, /another audience/],
    [
      'a token whose iat is text',
      () => token({ claims: { iat: 'now' } }),
      jwks,
      /"iat" claim must be a number/,
    ],
    ['a token signed with another key', () => token({ forged: true }), jwks, /bad signature/],
    [
      'an HS256 token, to a service with public keys',
      () => token({ alg: 'HS256' }),
      jwks,
      /not signed with a public-key algorithm/,
    ],
    [
      'an EdDSA token, to a service with a secret',
      () => token({}),
      secret,
      /signed with a public-key algorithm/,
    ],
    [
      'a token naming a key nobody knows',
      () => token({ kid: 'ed-9' }),
      jwks,
      /a key this service does not know/,
    ],
    [
      'an EdDSA token naming the P-256 key',
      () => token({ kid: 'ec-1' }),
      jwks,
      /a key this service does not know|bad signature/,
    ],
    [
      'a token with critical extensions',
      async () => {
        // Signed by hand: jose signs no header with extensions it does not know.
        const [, payload] = (await token({})).split('.');
        const header = Buffer.from(JSON.stringify({ alg: 'EdDSA', kid: 'ed-1', crit: ['x'], x: 1 })).toString(
          'base64url',
        );
        const signature = sign(null, Buffer.from(`${header}.${payload}`), ed.privateKey).toString(
          'base64url',
        );
        return `${header}.${payload}.${signature}`;
      },
      jwks,
      /^malformed token/,
    ],
    [
      'a token whose payload was changed',
      async () => {
        const [header, , signature] = (await token({})).split('.');
        const payload = Buffer.from(JSON.stringify({ iss: ISSUER, aud: AUDIENCE })).toString('base64url');
        return `${header}.${payload}.${signature}`;
      },
      jwks,
      /bad signature/,
    ],
    ['two parts', async () => (await token({})).split('.').slice(0, 2).join('.'), jwks, /^malformed token/],
    ['not base64url', async () => `${await token({})}!`, jwks, /^malformed token|bad signature/],
    ['a session', () => session({}), jwks, /^$/, 'session'],
    [
      'a session whose header does not say so',
      () => session({ typ: 'JWT' }),
      jwks,
      /not a session/,
      'session',
    ],
    ["a call's token as a session", () => token({}), jwks, /not a session/, 'session'],
    [
      'a session without a key',
      () => session({ without: ['key'] }),
      jwks,
      /^session has no "key"/,
      'session',
    ],
    [
      'an expired session',
      () => session({ claims: { iat: now() - 100, exp: now() - 50 } }),
      jwks,
      /^session expired$/,
      'session',
    ],
    [
      'a session living longer than 60 s',
      () => session({ claims: { exp: now() + 600 } }),
      jwks,
      /^session lifetime 600s exceeds the 60s limit$/,
      'session',
    ],
    [
      'a session signed with another key',
      () => session({ forged: true }),
      jwks,
      /^bad session's signature/,
      'session',
    ],
    [
      "a call signed with another key than its session's",
      () => token({ alg: 'HS256' }),
      new TextEncoder().encode('the key of another session, 32 bytes'),
      /^bad signature: not signed with the key of the session it came with$/,
      'in-session',
    ],
  ];

  for (const [name, make, keys, expected, role = 'call'] of cases) {
    it(`agree on ${name}`, async () => {
      const text = await make();
      const [onNode, withJose] = [
        await outcome(keys, text, true, role),
        await outcome(keys, text, false, role),
      ];
      if ('claims' in withJose) {
        assert.match('', expected, `jose accepted it: ${JSON.stringify(withJose.claims)}`);
        assert.deepEqual(onNode, withJose);
        return;
      }
      assert.match(withJose.refusal, expected);
      assert.ok('refusal' in onNode, `node:crypto accepted what jose refused (${withJose.refusal})`);
      const refusal = (onNode as { refusal: string }).refusal;
      if (withJose.refusal.startsWith('malformed token')) assert.match(refusal, /^malformed token/);
      else assert.equal(refusal, withJose.refusal);
    });
  }
});

describe('verifyToken and verifyBody', () => {
  const request = {
    audience: AUDIENCE,
    method: 'POST',
    path: '/causeway/v1/invoke',
    body: new TextEncoder().encode('{"object":{}}'),
  };

  /** Checks one signed request with `node` as given; returns how often Web Crypto verified and digested. */
  async function webCryptoCalls(t: TestContext, node?: null): Promise<{ verify: number; digest: number }> {
    const authorization = `Bearer ${await signRequest(secret, request)}`;
    const verify = t.mock.method(crypto.subtle, 'verify');
    const digest = t.mock.method(crypto.subtle, 'digest');
    const claims = await verifyToken(secret, authorization, request, undefined, node);
    await verifyBody(claims, request.body, new ReplayGuard(), node);
    return { verify: verify.mock.callCount(), digest: digest.mock.callCount() };
  }

  it('check with node:crypto on Node by default, Web Crypto untouched', async (t) => {
    assert.deepEqual(await webCryptoCalls(t), { verify: 0, digest: 0 });
  });

  it('check with jose and Web Crypto when given null, as off Node', async (t) => {
    assert.deepEqual(await webCryptoCalls(t, null), { verify: 1, digest: 1 });
  });
});

describe('ReplayGuard', () => {
  /** A guard on a clock the test moves, in seconds since the epoch. */
  function guardAt(start: number, maxIds?: number) {
    const clock = { now: start };
    const guard = new ReplayGuard({ now: () => clock.now, ...(maxIds ? { maxIds } : {}) });
    return { guard, clock };
  }

  it('refuses an id it has admitted, and forgets it once it has expired', () => {
    const { guard, clock } = guardAt(1000);
    assert.equal(guard.admit('a', 1030), true);
    assert.equal(guard.admit('a', 1030), false, 'a replay');
    clock.now = 1036; // past exp and the 5 s clock tolerance
    assert.equal(guard.admit('b', 1066), true);
    assert.equal(guard.size, 1, 'the expired id is forgotten');
  });

  it('keeps at most maxIds ids, however many calls come before their tokens expire', () => {
    const { guard, clock } = guardAt(1000, 100);
    for (let call = 0; call < 1000; call++) {
      clock.now = 1000 + call / 100; // 100 calls a second, 30 s tokens: 3,000 live at once uncapped
      assert.equal(guard.admit(`id-${call}`, Math.floor(clock.now) + 30), true, `call ${call}`);
      assert.ok(guard.size <= 100, `${guard.size} ids kept after call ${call}`);
    }
  });

  it('still refuses a replay of an id it forgot to stay within its cap, and what expires no later', () => {
    const { guard } = guardAt(1000, 2);
    assert.equal(guard.admit('first', 1030), true);
    assert.equal(guard.admit('second', 1031), true);
    assert.equal(guard.admit('third', 1032), true, 'admitted; "first" forgotten');
    assert.equal(guard.size, 2);
    assert.equal(guard.admit('first', 1030), false, 'the replay of a forgotten id');
    assert.equal(guard.admit('other', 1030), false, 'expires no later than a forgotten id');
    assert.equal(guard.admit('fourth', 1033), true, '"second" forgotten');
    assert.equal(guard.admit('second', 1031), false, 'the replay of the next forgotten id');
    assert.equal(guard.admit('third', 1032), false, 'the replay of an id kept');
  });
});
