import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { credentialsProblem } from './credentials.ts';

describe('credentialsProblem', () => {
  it('finds nothing wrong with a token, or a certificate and its key', () => {
    assert.equal(credentialsProblem({ server: 'https://10.0.0.1:6443', token: 't' }), undefined);
    assert.equal(
      credentialsProblem({
        server: 'https://k8s.example.com',
        certificateData: 'c',
        keyData: 'k',
        caData: 'ca',
        insecure: false,
        expiration: '2030-01-01T00:00:00Z',
      }),
      undefined,
    );
  });

  it('says what is wrong otherwise', () => {
    assert.equal(credentialsProblem('token'), 'credentials must be an object with a server');
    assert.match(
      credentialsProblem({ server: '10.0.0.1', token: 't' }) ?? '',
      /"server" must be the API server's URL/,
    );
    assert.equal(
      credentialsProblem({ server: 'https://a' }),
      'credentials need a "token", or "certificateData" and "keyData"',
    );
    assert.equal(
      credentialsProblem({ server: 'https://a', keyData: 'k' }),
      '"certificateData" and "keyData" go together',
    );
    assert.equal(
      credentialsProblem({ server: 'https://a', token: '' }),
      '"token" must be a non-empty string',
    );
    assert.equal(
      credentialsProblem({ server: 'https://a', token: 't', insecure: 'yes' }),
      '"insecure" must be true or false',
    );
    assert.equal(
      credentialsProblem({ server: 'https://a', token: 't', expiration: 'tomorrow' }),
      '"expiration" must be an ISO 8601 time',
    );
  });
});
