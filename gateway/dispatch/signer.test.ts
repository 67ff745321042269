import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { describe, it } from 'node:test';
import { encodeSecret, ReplayGuard, TrustError, verifyRequest } from '../../protocol/index.ts';
import { hmacSigner, keySigner, type SigningKey } from './signer.ts';

const secret = encodeSecret('a secret of at least thirty-two bytes!');
const request = {
  audience: 'kopfexample',
  method: 'POST',
  path: '/causeway/v1/invoke',
  body: new TextEncoder().encode('{"a":1}'),
};
const bearer = (token: string) => `Bearer ${token}`;

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
    ]) {
      const header = JSON.parse(Buffer.from(String(token).split('.')[0] ?? '', 'base64url').toString());
      assert.deepEqual(header, { alg: 'EdDSA', typ: 'JWT', kid });
      const claims = await verifyRequest(jwks, bearer(String(token)), request, new ReplayGuard());
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
