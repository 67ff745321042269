import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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
  readCertificateFiles,
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

describe("the user's certificate files", () => {
  /** Writes the files (a CA file only when `ca` is given) and reads them as the gateway does. */
  async function read(t: TestContext, files: { cert: string; key: string; ca?: string }) {
    const dir = await mkdtemp(join(tmpdir(), 'causeway-certificate-files-'));
    t.after(() => rm(dir, { recursive: true, force: true }));
    const paths = {
      cert: join(dir, 'tls.crt'),
      key: join(dir, 'tls.key'),
      ...(files.ca !== undefined ? { ca: join(dir, 'ca.crt') } : {}),
    };
    await writeFile(paths.cert, files.cert);
    await writeFile(paths.key, files.key);
    if (paths.ca) await writeFile(paths.ca, files.ca as string);
    return readCertificateFiles(paths);
  }

  it('are served with the CA file as the bundle, or the certificate itself when there is none', async (t) => {
    const { certificates } = await renewCertificates(undefined, ['127.0.0.1']);
    const { cert, key, ca } = certificates;
    const loaded = await read(t, { cert, key, ca: ca.cert });
    assert.deepEqual([loaded.cert, loaded.key, loaded.bundle], [cert, key, ca.cert]);
    const selfSigned = await root();
    assert.equal((await read(t, { cert: selfSigned.cert, key: selfSigned.key })).bundle, selfSigned.cert);
  });

  it('are served with a chain through an intermediate to the CA of the bundle', async (t) => {
    const top = await root();
    const intermediate = await intermediateOf(top);
    const leaf = await issueServingCertificate(intermediate, ['127.0.0.1']);
    const chain = `${leaf.cert}${intermediate.cert}`;
    assert.equal((await read(t, { cert: chain, key: leaf.key, ca: top.cert })).cert, chain);
    await assert.rejects(read(t, { cert: leaf.cert, key: leaf.key, ca: top.cert }), {
      message: /tls\.crt is not signed by a CA in .*ca\.crt: the apiserver would not trust it/,
    });
  });

  it('are refused, saying which, when caught half-written: empty or cut short', async (t) => {
    const { certificates } = await renewCertificates(undefined, ['127.0.0.1']);
    const { cert, key, ca } = certificates;
    const cases: Array<[{ cert: string; key: string; ca: string }, RegExp]> = [
      [{ cert, key, ca: '' }, /ca\.crt holds no certificate/],
      [{ cert, key, ca: ca.cert.slice(0, ca.cert.length / 2) }, /ca\.crt holds a certificate cut short/],
      [{ cert, key, ca: `${ca.cert}${ca.cert.slice(0, 40)}` }, /ca\.crt holds a certificate cut short/],
      [{ cert: '', key, ca: ca.cert }, /tls\.crt holds no certificate/],
      [{ cert: cert.slice(0, -30), key, ca: ca.cert }, /tls\.crt holds a certificate cut short/],
    ];
    for (const [files, message] of cases) await assert.rejects(read(t, files), { message });
  });

  it("are refused when the key is not the certificate's, or another CA signed it", async (t) => {
    const { certificates } = await renewCertificates(undefined, ['127.0.0.1']);
    const other = (await renewCertificates(undefined, ['127.0.0.1'])).certificates;
    await assert.rejects(read(t, { cert: certificates.cert, key: other.key, ca: certificates.ca.cert }), {
      message: /tls\.key is not the key of the certificate in .*tls\.crt/,
    });
    await assert.rejects(read(t, { cert: certificates.cert, key: certificates.key, ca: other.ca.cert }), {
      message: /is not signed by a CA in .*ca\.crt/,
    });
  });
});

/** A CA of the user's own, as openssl or cert-manager makes one: it may sign intermediates. */
async function root(): Promise<CertificateAuthority> {
  const generated = await generate([{ name: 'commonName', value: 'root' }], {
    keyType: 'ec',
    curve: 'P-256',
    algorithm: 'sha256',
    extensions: [
      { name: 'basicConstraints', cA: true, critical: true },
      { name: 'keyUsage', keyCertSign: true, digitalSignature: true, critical: true },
    ],
  });
  return { cert: generated.cert, key: generated.private };
}

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
