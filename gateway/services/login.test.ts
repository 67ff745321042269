import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { kubeConfigOf } from './login.ts';

describe('kubeConfigOf', () => {
  it('holds the credentials alone, PEM as the kubeconfig keeps it (base64)', () => {
    const config = kubeConfigOf({
      server: 'https://10.0.0.1:6443',
      certificateData: '-----BEGIN CERTIFICATE-----\nc\n',
      keyData: '-----BEGIN PRIVATE KEY-----\nk\n',
      caData: '-----BEGIN CERTIFICATE-----\nca\n',
    });
    const cluster = config.getCurrentCluster();
    const user = config.getCurrentUser();
    assert.equal(cluster?.server, 'https://10.0.0.1:6443');
    assert.equal(cluster?.skipTLSVerify, false);
    assert.equal(
      Buffer.from(cluster?.caData ?? '', 'base64').toString(),
      '-----BEGIN CERTIFICATE-----\nca\n',
    );
    assert.equal(Buffer.from(user?.certData ?? '', 'base64').toString(), '-----BEGIN CERTIFICATE-----\nc\n');
    assert.equal(Buffer.from(user?.keyData ?? '', 'base64').toString(), '-----BEGIN PRIVATE KEY-----\nk\n');
    assert.equal(user?.token, undefined);
    assert.equal(
      kubeConfigOf({ server: 'https://a', token: 't', insecure: true }).getCurrentCluster()?.skipTLSVerify,
      true,
    );
  });
});
