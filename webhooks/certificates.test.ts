import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { describe, it } from 'node:test';
import { caBundle, hostsOf, renewalDue, renewCertificates } from './certificates.ts';

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
    assert.ok(issuedBy(nearing.certificates.cert, certificates.ca.cert), 'the current CA still signs');
    const ended = await renewCertificates(nearing.certificates, ['a.example'], new Date(caEnd + DAY));
    assert.equal(ended.certificates.ca, next);
    assert.ok(issuedBy(ended.certificates.cert, next.cert));
  });
});
