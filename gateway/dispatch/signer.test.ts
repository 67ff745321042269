import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { encodeSecret, ReplayGuard, TrustError, verifyRequest } from '../../protocol/index.ts';
import { nodeSigner } from './signer.ts';

const secret = encodeSecret('a secret of at least thirty-two bytes!');
const request = {
  audience: 'kopfexample',
  method: 'POST',
  path: '/causeway/v1/invoke',
  body: new TextEncoder().encode('{"a":1}'),
};

describe('node signer', () => {
  it('makes tokens that the protocol verifier (jose) accepts', async () => {
    const token = nodeSigner(secret)(request);
    const claims = await verifyRequest(secret, `Bearer ${token}`, request, new ReplayGuard());
    assert.equal(claims.aud, 'kopfexample');
    assert.equal(claims.req, 'POST /causeway/v1/invoke');
    assert.ok(claims.exp - claims.iat <= 60);
  });

  it('binds the body and the secret', async () => {
    const token = nodeSigner(secret)(request);
    const altered = { ...request, body: new TextEncoder().encode('{"a":2}') };
    await assert.rejects(verifyRequest(secret, `Bearer ${token}`, altered, new ReplayGuard()), /altered/);
    const other = nodeSigner(encodeSecret('another secret of at least thirty-two bytes'))(request);
    await assert.rejects(verifyRequest(secret, `Bearer ${other}`, request, new ReplayGuard()), TrustError);
  });
});
