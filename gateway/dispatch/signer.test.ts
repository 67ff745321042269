import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { describe, it } from 'node:test';
import {
  encodeSecret,
  ReplayGuard,
  SESSION_HEADER,
  TrustError,
  verifyRequest,
} from '../../protocol/index.ts';
import { hmacSigner, keySigner, type Proof, type SigningKey } from './signer.ts';

const secret = encodeSecret('a secret of at least thirty-two bytes!');
const request = {
  audience: 'kopfexample',
  method: 'POST',
  path: '/causeway/v1/invoke',
  body: new TextEncoder().encode('{"a":1}'),
};
const bearer = (proof: Proof) => proof.authorization;

function keyPair(kid: string): { signing: SigningKey; published: Record<string, unknown> } {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  return {
    signing: { kid, privateKey },
    published: { ...publicKey.export({ format: 'jwk' }), kid, alg: 'EdDSA', use: 'sig' },
  };
}

describe('HS256 signer', () => {
  it('makes tokens that the protocol verifier (jose) accepts', async () => {
    const token = hmacSigner(secret)(request);
    const claims = await verifyRequest(secret, bearer(token), request, new ReplayGuard());
    assert.equal(claims.aud, 'kopfexample');
    assert.equal(claims.req, 'POST /causeway/v1/invoke');
    assert.ok(claims.exp - claims.iat <= 60);
  });

  it('binds the body and the secret', async () => {
    const token = hmacSigner(secret)(request);
    const altered = { ...request, body: new TextEncoder().encode('{"a":2}') };
    await assert.rejects(verifyRequest(secret, bearer(token), altered, new ReplayGuard()), /altered/);
    const other = hmacSigner(encodeSecret('another secret of at least thirty-two bytes'))(request);
    await assert.rejects(
      verifyRequest(secret, bearer(other), request, new ReplayGuard()),
      /bad signature: not signed with the secret this service shares with the gateway/,
    );
  });
});

describe('EdDSA signer', () => {
  const one = keyPair('one');
  const two = keyPair('two');
  const jwks = { keys: [one.published, two.published] };

  it('signs with the key current at each call, and the public keys verify every one', async () => {
    let current = one.signing;
    const signer = keySigner(() => current);
    const first = signer(request);
    current = two.signing;
    const second = signer(request);
    for (const [token, kid] of [
      [first, 'one'],
      [second, 'two'],
    ] as const) {
      const header = JSON.parse(
        Buffer.from(token.authorization.slice(7).split('.')[0] ?? '', 'base64url').toString(),
      );
      assert.deepEqual(header, { alg: 'EdDSA', typ: 'JWT', kid });
      const claims = await verifyRequest(jwks, bearer(token), request, new ReplayGuard());
      assert.equal(claims.aud, 'kopfexample');
    }
  });

  it('is refused by a service that does not know the key yet, or knows another under its id', async () => {
    const token = keySigner(() => two.signing)(request);
    await assert.rejects(
      verifyRequest({ keys: [one.published] }, bearer(token), request, new ReplayGuard()),
      /signed with a key this service does not know: its copy of the gateway's public keys is out of date/,
    );
    const impostor = keySigner(() => ({ ...keyPair('one').signing }))(request);
    await assert.rejects(
      verifyRequest(jwks, bearer(impostor), request, new ReplayGuard()),
      /bad signature: not signed with the gateway's key/,
    );
  });

  it('leaves no way across: HS256 tokens against public keys, EdDSA tokens against a secret', async () => {
    // The classic confusion: an HMAC keyed with the public key's bytes, which anyone can compute.
    const publicBytes = new TextEncoder().encode(JSON.stringify(jwks));
    const confused = hmacSigner(publicBytes)(request);
    await assert.rejects(verifyRequest(jwks, bearer(confused), request, new ReplayGuard()), (error) => {
      assert.ok(error instanceof TrustError);
      assert.match(error.message, /not signed with a public-key algorithm this service accepts/);
      return true;
    });
    const signed = keySigner(() => one.signing)(request);
    await assert.rejects(
      verifyRequest(secret, bearer(signed), request, new ReplayGuard()),
      /signed with a public-key algorithm, but this service checks HS256/,
    );
  });
});

describe('EdDSA signer, in a session', () => {
  const one = keyPair('one');
  const two = keyPair('two');
  const jwks = { keys: [one.published, two.published] };
  const partOf = (token: string, index: number) =>
    JSON.parse(Buffer.from(token.split('.')[index] ?? '', 'base64url').toString());
  const inSession = (proof: Proof) =>
    verifyRequest(jwks, proof.authorization, request, new ReplayGuard(), proof[SESSION_HEADER]);

  it('signs each call HS256 under a session it signed EdDSA, which the verifier takes', async () => {
    const proof = keySigner(() => one.signing)(request, true);
    const session = proof[SESSION_HEADER] ?? '';
    assert.deepEqual(partOf(session, 0), { alg: 'EdDSA', typ: 'causeway-session+jwt', kid: 'one' });
    assert.equal(partOf(session, 1).aud, 'kopfexample');
    assert.equal(partOf(session, 1).exp - partOf(session, 1).iat, 60);
    assert.deepEqual(partOf(proof.authorization.slice(7), 0), { alg: 'HS256', typ: 'JWT' });
    const claims = await inSession(proof);
    assert.equal(claims.req, 'POST /causeway/v1/invoke');
  });

  it('keeps one session per service until halfway through its life, or until the key changes', (t) => {
    t.mock.timers.enable({ apis: ['Date'], now: 1_800_000_000_000 });
    let current = one.signing;
    const signer = keySigner(() => current);
    const first = signer(request, true)[SESSION_HEADER];
    assert.equal(signer(request, true)[SESSION_HEADER], first);
    assert.notEqual(signer({ ...request, audience: 'another' }, true)[SESSION_HEADER], first);
    t.mock.timers.tick(29_000);
    assert.equal(signer(request, true)[SESSION_HEADER], first);
    t.mock.timers.tick(1_000);
    const second = signer(request, true)[SESSION_HEADER];
    assert.notEqual(second, first);
    current = two.signing;
    const third = signer(request, true)[SESSION_HEADER] ?? '';
    assert.notEqual(third, second);
    assert.equal(partOf(third, 0).kid, 'two');
  });

  it('is refused without its session, in another session, and by a service with a shared secret', async () => {
    const signer = keySigner(() => one.signing);
    const proof = signer(request, true);
    await assert.rejects(
      verifyRequest(jwks, proof.authorization, request, new ReplayGuard()),
      /not signed with a public-key algorithm this service accepts/,
    );
    const other = keySigner(() => one.signing)(request, true);
    await assert.rejects(
      inSession({ ...proof, [SESSION_HEADER]: other[SESSION_HEADER] ?? '' }),
      /bad signature: not signed with the key of the session it came with/,
    );
    await assert.rejects(
      verifyRequest(secret, proof.authorization, request, new ReplayGuard(), proof[SESSION_HEADER]),
      /checks HS256 with a secret it shares with the gateway: it takes no session/,
    );
  });

  it('is refused once the session has expired, though the service took it before', async (t) => {
    t.mock.timers.enable({ apis: ['Date'], now: Date.now() });
    const proof = keySigner(() => one.signing)(request, true);
    await inSession(proof);
    t.mock.timers.tick(66_000); // its 60 s and the 5 s of clock tolerance
    const session = proof[SESSION_HEADER] ?? '';
    // A fresh call, signed with the session's key (which travels in the session).
    const late = hmacSigner(Buffer.from(partOf(session, 1).key, 'base64url'))(request);
    await assert.rejects(inSession({ ...late, [SESSION_HEADER]: session }), /session expired/);
  });
});
