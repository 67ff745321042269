import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { once } from 'node:events';
import { describe, it, type TestContext } from 'node:test';
import { connect, createServer } from 'node:tls';
import { generate } from 'selfsigned';
import {
  type CertificateAuthority,
  caBundle,
  hostsOf,
  issueServingCertificate,
  keptCertificates,
  keptFiles,
  renewalDue,
  renewCertificates,
} from './certificates.ts';

const DAY = 86_400_000;
const issuedBy = (cert: string, ca: string) => new X509Certificate(cert).checkIssued(new X509Certificate(ca));

describe('webhook certificates', () => {
  it('make a CA and a serving certificate it signs, for every host given', async () => {
    const { certificates, changed } = await renewCertificates(undefined, ['causeway.ns.svc', '127.0.0.1']);
    assert.equal(changed, true);
    assert.ok(issuedBy(certificates.cert, certificates.ca.cert));
    assert.deepEqual(hostsOf(certificates).sort(), ['127.0.0.1', 'causeway.ns.svc']);
    assert.ok(new X509Certificate(certificates.ca.cert).ca);
    assert.equal(caBundle(certificates), certificates.ca.cert);
  });

  it('keep what is still good, and re-sign with the same CA for other hosts or near the end', async () => {
    const { certificates } = await renewCertificates(undefined, ['a.example']);
    assert.equal((await renewCertificates(certificates, ['a.example'])).changed, false);
    const moved = await renewCertificates(certificates, ['a.example', 'tunnel.example']);
    assert.equal(moved.changed, true);
    assert.equal(moved.certificates.ca, certificates.ca, 'the apiserver keeps trusting the same CA');
    const late = await renewCertificates(
      certificates,
      ['a.example'],
      new Date(renewalDue(certificates).getTime() + DAY),
    );
    assert.equal(late.changed, true);
    assert.ok(issuedBy(late.certificates.cert, certificates.ca.cert));
    assert.notEqual(late.certificates.cert, certificates.cert);
  });

  it('trust the next CA before it signs anything, and switch to it when the current one ends', async () => {
    const { certificates } = await renewCertificates(undefined, ['a.example']);
    const caEnd = Date.parse(new X509Certificate(certificates.ca.cert).validTo);
    const nearing = await renewCertificates(certificates, ['a.example'], new Date(caEnd - 30 * DAY));
    const next = nearing.certificates.nextCa;
    assert.ok(next, 'a next CA is made');
    assert.equal(caBundle(nearing.certificates), certificates.ca.cert + next.cert, 'both are trusted');
    assert.equal(
      caBundle(nearing.certificates).match(
        /^-----BEGIN CERTIFICATE-----\n[^-]+\n-----END CERTIFICATE-----\n/gm,
      )?.length,
      2,
      'two PEM blocks, each on lines of its own',
    );
    const oldKept = { cert: certificates.ca.cert.trimEnd(), key: certificates.ca.key };
    assert.equal(caBundle({ ...nearing.certificates, ca: oldKept }), certificates.ca.cert + next.cert);
    assert.ok(issuedBy(nearing.certificates.cert, certificates.ca.cert), 'the current CA still signs');
    const ended = await renewCertificates(nearing.certificates, ['a.example'], new Date(caEnd + DAY));
    assert.equal(ended.certificates.ca, next);
    assert.ok(issuedBy(ended.certificates.cert, next.cert));
  });

  it('make a CA that signs no other CA: a chain through an intermediate it signed is not trusted', async (t) => {
    const { certificates } = await renewCertificates(undefined, ['127.0.0.1']);
    const direct = await issueServingCertificate(certificates.ca, ['127.0.0.1']);
    assert.equal(await handshake(t, direct.key, direct.cert, certificates.ca.cert), 'trusted');
    // What a leaked CA key could otherwise make: an intermediate CA, and certificates it signs.
    const intermediate = await intermediateOf(certificates.ca);
    const leaf = await issueServingCertificate(intermediate, ['127.0.0.1']);
    assert.equal(
      await handshake(
        t,
        leaf.key,
        `${leaf.cert.trim()}\n${intermediate.cert.trim()}\n`,
        certificates.ca.cert,
      ),
      'path length constraint exceeded',
    );
  });

  it('are kept in two Secrets: the serving pair, and the CA keys apart', async () => {
    const { certificates } = await renewCertificates(undefined, ['a.example']);
    const caEnd = Date.parse(new X509Certificate(certificates.ca.cert).validTo);
    const withNext = (await renewCertificates(certificates, ['a.example'], new Date(caEnd - 30 * DAY)))
      .certificates;
    const files = keptFiles(withNext);
    assert.deepEqual(Object.keys(files.serving).sort(), ['ca.crt', 'tls.crt', 'tls.key']);
    assert.deepEqual(Object.keys(files.authority).sort(), ['ca.crt', 'ca.key', 'next-ca.crt', 'next-ca.key']);
    assert.deepEqual(keptCertificates(files.serving, files.authority), {
      certificates: withNext,
      outdated: false,
    });
    assert.deepEqual(keptCertificates(files.serving, undefined), {
      certificates: undefined,
      outdated: false,
    });
    assert.deepEqual(keptCertificates(undefined, files.authority), {
      certificates: undefined,
      outdated: false,
    });
  });

  it('kept the old way, in one Secret with the CA key, are read as they are and said to be outdated', async () => {
    const { certificates } = await renewCertificates(undefined, ['a.example']);
    const { serving, authority } = keptFiles(certificates);
    const old = { ...serving, ...authority };
    assert.deepEqual(keptCertificates(old, undefined), { certificates, outdated: true });
    // Moved half-way (the CA Secret written, the serving one not yet): the CA Secret is the one read.
    const other = (await renewCertificates(undefined, ['a.example'])).certificates;
    assert.deepEqual(keptCertificates(old, keptFiles({ ...certificates, ca: other.ca }).authority), {
      certificates: { ...certificates, ca: other.ca },
      outdated: true,
    });
  });
});

/** An intermediate CA signed by `ca`, as anyone with its key could make one. */
async function intermediateOf(ca: CertificateAuthority): Promise<CertificateAuthority> {
  const generated = await generate([{ name: 'commonName', value: 'intermediate' }], {
    keyType: 'ec',
    curve: 'P-256',
    algorithm: 'sha256',
    ca,
    extensions: [
      { name: 'basicConstraints', cA: true, critical: true },
      { name: 'keyUsage', keyCertSign: true, digitalSignature: true, critical: true },
    ],
  });
  return { cert: generated.cert, key: generated.private };
}

/** Whether a client trusting `ca` accepts a server presenting `chain`: 'trusted', or OpenSSL's reason. */
async function handshake(t: TestContext, key: string, chain: string, ca: string): Promise<string> {
  const server = createServer({ key, cert: chain }, (socket) => socket.end());
  server.on('tlsClientError', () => {});
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(() => server.close());
  const { port } = server.address() as { port: number };
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port, ca }, () => {
      socket.destroy();
      resolve('trusted');
    });
    socket.on('error', (error) => resolve(error.message));
  });
}
