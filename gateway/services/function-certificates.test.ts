import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { issueServingCertificate, newAuthority } from '../../webhooks/certificates.ts';
import { authorityProblem, certificateHosts, issueReason } from './function-certificates.ts';

const DAY_MS = 86_400_000;

describe('certificateHosts', () => {
  it("names a Service's DNS name in both its forms, and any other host as it is", () => {
    const both = ['billing.team-a.svc', 'billing.team-a.svc.cluster.local'];
    assert.deepEqual(certificateHosts('https://billing.team-a.svc:8080', 'team-a'), both);
    assert.deepEqual(certificateHosts('https://billing.team-a.svc.cluster.local', 'team-a'), both);
    assert.deepEqual(certificateHosts('https://127.0.0.1:9443', 'team-a'), ['127.0.0.1']);
    assert.deepEqual(certificateHosts('https://[::1]:9443', 'team-a'), ['::1']);
  });

  it("refuses a Service of another namespace than the Secret's, and plain HTTP", () => {
    assert.throws(
      () => certificateHosts('https://billing.team-b.svc:8080', 'team-a'),
      /the certificate of a Service in namespace "team-b" is not issued into a Secret in "team-a"/,
    );
    assert.throws(
      () => certificateHosts('http://billing.team-a.svc:8080', 'team-a'),
      /a service given a certificate is called over HTTPS, not http:/,
    );
  });
});

describe('issueReason', async () => {
  const now = new Date('2026-01-01T00:00:00Z');
  const ca = await newAuthority('test CA', now);
  const hosts = ['billing.team-a.svc', 'billing.team-a.svc.cluster.local', '::1'];
  const issued = await issueServingCertificate(ca, hosts, now);

  it('keeps a certificate of this CA, for these hosts, with its key, until a third of its life is left', () => {
    assert.equal(issueReason(issued, ca, hosts, now), undefined);
    assert.equal(
      issueReason(issued, ca, [...hosts].reverse(), new Date(now.getTime() + 59 * DAY_MS)),
      undefined,
    );
    assert.match(
      issueReason(issued, ca, hosts, new Date(now.getTime() + 61 * DAY_MS)) ?? '',
      /^it ends on 2026-04-01/,
    );
  });

  it('issues anew when there is none, or it is garbled, of another CA, with another key or for other hosts', async () => {
    const other = await newAuthority('another CA', now);
    const elsewhere = await issueServingCertificate(other, hosts, now);
    const otherHosts = await issueServingCertificate(ca, ['billing.team-a.svc'], now);
    assert.equal(issueReason(undefined, ca, hosts, now), 'there was none');
    assert.equal(
      issueReason({ cert: 'garbage', key: issued.key }, ca, hosts, now),
      'it held no certificate and key',
    );
    assert.equal(
      issueReason({ cert: issued.cert, key: elsewhere.key }, ca, hosts, now),
      'its key does not match the certificate',
    );
    assert.equal(issueReason(elsewhere, ca, hosts, now), 'another CA signed it');
    assert.equal(issueReason(otherHosts, ca, hosts, now), 'it named billing.team-a.svc');
    const swapped = await issueServingCertificate(
      ca,
      ['billing.team-a.svc', 'billing.team-a.svc.cluster.local', '::2'],
      now,
    );
    assert.equal(
      issueReason(swapped, ca, hosts, now),
      'it named billing.team-a.svc, billing.team-a.svc.cluster.local, 0:0:0:0:0:0:0:2',
    );
  });
});

describe('authorityProblem', () => {
  it('takes a CA with its key, and refuses none, a garbled one, another key, a serving certificate or an ended CA', async () => {
    const now = new Date('2026-01-01T00:00:00Z');
    const ca = await newAuthority('test CA', now);
    const other = await newAuthority('another CA', now);
    const serving = await issueServingCertificate(ca, ['billing.team-a.svc'], now);
    assert.equal(authorityProblem(ca, now), undefined);
    assert.equal(authorityProblem(undefined, now), 'has no tls.crt and tls.key');
    assert.equal(authorityProblem({ cert: 'garbage', key: ca.key }, now), 'holds no certificate and key');
    assert.equal(
      authorityProblem({ cert: ca.cert, key: other.key }, now),
      'holds a key that does not match its certificate',
    );
    assert.equal(authorityProblem(serving, now), 'holds a certificate for CN=billing.team-a.svc, not a CA');
    assert.match(
      authorityProblem(ca, new Date('2036-12-31T00:00:00Z')) ?? '',
      /^holds a CA that ended on 2035-12-/,
    );
  });
});
