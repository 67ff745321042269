/**
 * The webhook server's certificates: a CA the apiserver trusts (its certificate is the configurations'
 * `caBundle`) and a serving certificate it signs, for every name and address the apiserver may use.
 * The CA lives long and the serving certificate is renewed well before it expires, signed by the same
 * CA, so a renewal never changes what the apiserver trusts and no request fails during it. When the CA
 * itself nears its end, the next CA goes into the bundle first and signs only later. Or the user's own
 * certificate files, read again when they change.
 */

import { createPrivateKey, X509Certificate } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import { isIP } from 'node:net';
import { generate } from 'selfsigned';

export interface CertificateAuthority {
  cert: string;
  key: string;
}

export interface Certificates {
  /** Signs the serving certificate. */
  ca: CertificateAuthority;
  /** The next CA, already trusted, once the current one nears its end. */
  nextCa?: CertificateAuthority;
  /** The serving certificate (PEM) and its key. */
  cert: string;
  key: string;
}

const DAY_MS = 86_400_000;
const CA_DAYS = 3650;
const SERVING_DAYS = 90;
/** Renew when this little of a certificate's life is left. */
const RENEW_WITHIN = 1 / 3;

/** What the apiserver must trust: the CA, and the next one once there is one. */
export function caBundle(certificates: Certificates): string {
  return [certificates.ca.cert, certificates.nextCa?.cert]
    .filter((pem) => pem !== undefined)
    .map(endingLine)
    .join('');
}

/** A PEM that ends its last line: concatenated, PEMs made without one run two lines into one. */
function endingLine(pem: string): string {
  return pem.endsWith('\n') ? pem : `${pem}\n`;
}

/** The hosts the serving certificate names: DNS names and IP addresses. */
export function hostsOf(certificates: Certificates): string[] {
  const names = new X509Certificate(certificates.cert).subjectAltName ?? '';
  return names
    .split(', ')
    .map((entry) => entry.replace(/^(DNS|IP Address):/, ''))
    .filter(Boolean);
}

/**
 * New certificates, or the given ones carried on: whatever is due (a serving certificate for other
 * hosts or near its end, a next CA, the switch to it) is done; `changed` says whether anything was.
 */
export async function renewCertificates(
  current: Certificates | undefined,
  hosts: readonly string[],
  now = new Date(),
): Promise<{ certificates: Certificates; changed: boolean }> {
  let ca = current?.ca;
  let nextCa = current?.nextCa;
  let changed = false;
  if (!ca || expired(ca.cert, now)) {
    ca = nextCa && !expired(nextCa.cert, now) ? nextCa : await authority(now);
    nextCa = undefined;
    changed = true;
  } else if (!nextCa && nearEnd(ca.cert, now)) {
    nextCa = await authority(now); // trusted first, used once the current CA is at its end
    changed = true;
  }
  const keep =
    current &&
    !changed &&
    !nearEnd(current.cert, now) &&
    sameHosts(hostsOf(current), hosts) &&
    new X509Certificate(current.cert).checkIssued(new X509Certificate(ca.cert));
  if (keep) return { certificates: current, changed: false };
  const serving = await servingCertificate(ca, hosts, now);
  return { certificates: { ca, ...(nextCa ? { nextCa } : {}), ...serving }, changed: true };
}

/**
 * The files of the two Secrets that keep certificates: the serving pair (what a server needs, with the
 * CA's certificate) and, apart, the CA's keys, so that what reads or mounts the one does not get the other.
 */
export interface KeptFiles {
  serving: Record<string, string>;
  authority: Record<string, string>;
}

export function keptFiles(certificates: Certificates): KeptFiles {
  const { ca, nextCa } = certificates;
  return {
    serving: { 'tls.crt': certificates.cert, 'tls.key': certificates.key, 'ca.crt': ca.cert },
    authority: {
      'ca.crt': ca.cert,
      'ca.key': ca.key,
      ...(nextCa ? { 'next-ca.crt': nextCa.cert, 'next-ca.key': nextCa.key } : {}),
    },
  };
}

/**
 * The certificates the Secrets keep, undefined when a half is missing. `outdated` when the serving
 * Secret holds a CA's key too (as before the CA had a Secret of its own): it is used, and is to be
 * written again as two.
 */
export function keptCertificates(
  serving: Record<string, string> | undefined,
  authority: Record<string, string> | undefined,
): { certificates: Certificates | undefined; outdated: boolean } {
  const outdated = Boolean(serving?.['ca.key'] || serving?.['next-ca.key']);
  const files = authority?.['ca.key'] ? authority : outdated ? serving : undefined;
  const [caCert, caKey, cert, key] = [
    files?.['ca.crt'],
    files?.['ca.key'],
    serving?.['tls.crt'],
    serving?.['tls.key'],
  ];
  if (!files || !caCert || !caKey || !cert || !key) return { certificates: undefined, outdated };
  const [nextCert, nextKey] = [files['next-ca.crt'], files['next-ca.key']];
  return {
    certificates: {
      ca: { cert: caCert, key: caKey },
      ...(nextCert && nextKey ? { nextCa: { cert: nextCert, key: nextKey } } : {}),
      cert,
      key,
    },
    outdated,
  };
}

/** When the serving certificate is to be renewed (a third of its life before its end). */
export function renewalDue(certificates: Certificates): Date {
  const certificate = new X509Certificate(certificates.cert);
  const from = Date.parse(certificate.validFrom);
  const to = Date.parse(certificate.validTo);
  return new Date(to - (to - from) * RENEW_WITHIN);
}

async function authority(now: Date, commonName = 'causeway webhooks CA'): Promise<CertificateAuthority> {
  const generated = await generate([{ name: 'commonName', value: commonName }], {
    keyType: 'ec',
    curve: 'P-256',
    algorithm: 'sha256',
    notBeforeDate: new Date(now.getTime() - 5 * 60_000), // clocks differ a little
    notAfterDate: new Date(now.getTime() + CA_DAYS * DAY_MS),
    extensions: [
      // Signs serving certificates only: no intermediate CA it signed is valid, should its key leak.
      { name: 'basicConstraints', cA: true, pathLenConstraint: 0, critical: true },
      { name: 'keyUsage', keyCertSign: true, cRLSign: true, digitalSignature: true, critical: true },
    ],
  });
  return { cert: endingLine(generated.cert), key: endingLine(generated.private) };
}

async function servingCertificate(ca: CertificateAuthority, hosts: readonly string[], now: Date) {
  const [first = 'localhost'] = hosts;
  const generated = await generate([{ name: 'commonName', value: first }], {
    keyType: 'ec',
    curve: 'P-256',
    algorithm: 'sha256',
    notBeforeDate: new Date(now.getTime() - 5 * 60_000),
    notAfterDate: new Date(now.getTime() + SERVING_DAYS * DAY_MS),
    ca: { key: ca.key, cert: ca.cert },
    extensions: [
      { name: 'basicConstraints', cA: false },
      { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
      { name: 'extKeyUsage', serverAuth: true },
      {
        name: 'subjectAltName',
        altNames: hosts.map((host) =>
          isIP(host) ? { type: 7 as const, ip: host } : { type: 2 as const, value: host },
        ),
      },
    ],
  });
  return { cert: endingLine(generated.cert), key: endingLine(generated.private) };
}

function expired(pem: string, now: Date): boolean {
  return Date.parse(new X509Certificate(pem).validTo) <= now.getTime();
}

function nearEnd(pem: string, now: Date): boolean {
  const certificate = new X509Certificate(pem);
  const from = Date.parse(certificate.validFrom);
  const to = Date.parse(certificate.validTo);
  return now.getTime() >= to - (to - from) * RENEW_WITHIN;
}

function sameHosts(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && [...a].sort().every((host, i) => host === [...b].sort()[i]);
}

/** Certificate files given by the user (cert-manager's way): the serving pair and the CA to trust. */
export interface CertificateFiles {
  cert: string;
  key: string;
  /** PEM of what the apiserver is to trust; the serving certificate itself when absent (self-signed). */
  ca?: string;
}

export interface LoadedFiles {
  cert: string;
  key: string;
  bundle: string;
  /** Changes when a file does: sizes and modification times. */
  stamp: string;
}

/**
 * Reads the files and checks them as the apiserver will: the key is the certificate's, and the
 * certificate (through the chain its file holds) is signed by a CA of the bundle, or is in it. So a
 * renewal caught half-written (a file empty or cut short while it is written again) is refused, not
 * served or given to the apiserver to trust.
 */
export async function readCertificateFiles(files: CertificateFiles): Promise<LoadedFiles> {
  const paths = [files.cert, files.key, ...(files.ca ? [files.ca] : [])];
  const stamp = (await Promise.all(paths.map((path) => stat(path))))
    .map((each) => `${each.size}:${each.mtimeMs}`)
    .join(',');
  const [cert = '', key = '', ca] = await Promise.all(paths.map((path) => readFile(path, 'utf8')));
  const chain = certificatesIn(cert, files.cert);
  const [leaf] = chain;
  if (!leaf) throw new Error(`${files.cert} holds no certificate`);
  if (!leaf.checkPrivateKey(createPrivateKey(key))) {
    throw new Error(`${files.key} is not the key of the certificate in ${files.cert}`);
  }
  const bundle = ca ?? cert;
  const bundlePath = files.ca ?? files.cert;
  const trusted = certificatesIn(bundle, bundlePath);
  if (trusted.length === 0) throw new Error(`${bundlePath} holds no certificate`);
  if (!leadsTo(chain, trusted)) {
    throw new Error(
      `the certificate in ${files.cert} is not signed by a CA in ${bundlePath}: the apiserver would not trust it`,
    );
  }
  return { cert, key, bundle, stamp };
}

const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----[^-]+-----END CERTIFICATE-----/g;

/** The certificates of a PEM text, in order; one cut short (a file caught while written) is an error. */
function certificatesIn(pem: string, path: string): X509Certificate[] {
  const blocks = pem.match(PEM_CERTIFICATE) ?? [];
  if (blocks.length !== pem.split('-----BEGIN CERTIFICATE-----').length - 1) {
    throw new Error(`${path} holds a certificate cut short`);
  }
  return blocks.map((block) => new X509Certificate(block));
}

/** Whether `chain` (a leaf, then the CAs that signed it) is in `trusted` or signed by one of them. */
function leadsTo(chain: readonly X509Certificate[], trusted: readonly X509Certificate[]): boolean {
  const signedBy = (issuer: X509Certificate, subject: X509Certificate) =>
    subject.checkIssued(issuer) && subject.verify(issuer.publicKey);
  const seen = new Set<X509Certificate>();
  for (let current = chain[0]; current && !seen.has(current); ) {
    const subject = current;
    seen.add(subject);
    if (trusted.some((each) => each.fingerprint256 === subject.fingerprint256 || signedBy(each, subject))) {
      return true;
    }
    current = chain.find((each) => each !== subject && signedBy(each, subject));
  }
  return false;
}

/**
 * For the gateway's function services (gateway/services/function-certificates.ts): a CA of their own,
 * named `commonName`, and serving certificates it signs, made as the webhooks' are.
 */
export function newAuthority(commonName: string, now = new Date()): Promise<CertificateAuthority> {
  return authority(now, commonName);
}

export function issueServingCertificate(
  ca: CertificateAuthority,
  hosts: readonly string[],
  now = new Date(),
): Promise<{ cert: string; key: string }> {
  return servingCertificate(ca, hosts, now);
}
