/**
 * Nothing in the clear to the function services in the cluster: the gateway keeps a CA of their own
 * in a Secret (made at its first start, shared by its replicas and restarts; its key is read by the
 * gateway only) and, for each service given a certificate Secret, issues a serving certificate for
 * the host of the service's URL into that Secret, which the service's pod mounts (`causeway serve
 * --tls-cert --tls-key` reads it again when it changes). That service is then trusted with a
 * certificate from this CA only, for that host: not one from the system's roots, nor another
 * service's. The certificates are looked at every `certificateCheckMs` and issued anew a third of
 * their life before their end, or at once when missing, garbled, for other hosts or from another CA.
 */
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { isIP } from 'node:net';
import {
  type CertificateAuthority,
  hostsOf,
  issueServingCertificate,
  newAuthority,
  renewalDue,
} from '../../webhooks/certificates.ts';
import type { FunctionEndpoint } from '../dispatch/services.ts';
import type { KubeClient } from '../kube/client.ts';
import { ApiError, ignoreNotFound } from '../kube/errors.ts';
import { MANAGED_BY_CAUSEWAY, type SecretName, secretPath, writeSecret } from '../kube/secrets.ts';
import type { Logger } from '../logging.ts';

const TLS_TYPE = 'kubernetes.io/tls';
const CA_NAME = 'causeway function services CA';

/** A Service's DNS name in the cluster: `<service>.<namespace>.svc`, with or without `.cluster.local`. */
const IN_CLUSTER =
  /^([a-z0-9]([-a-z0-9]*[a-z0-9])?)\.([a-z0-9]([-a-z0-9]*[a-z0-9])?)\.svc(\.cluster\.local)?$/;

/**
 * The hosts a certificate for a service at `url` names, its Secret in `namespace`: the URL's host,
 * and for a Service's name in the cluster both its forms. A Service of another namespace is refused:
 * whoever reads the Secret could then answer for a service they do not run.
 */
export function certificateHosts(url: string, namespace: string): string[] {
  const { protocol, hostname } = new URL(url);
  if (protocol !== 'https:') {
    throw new Error(`${url}: a service given a certificate is called over HTTPS, not ${protocol}`);
  }
  const host = hostname.replace(/^\[|\]$/g, '');
  const match = IN_CLUSTER.exec(host);
  if (!match) return [host];
  const [, service, , serviceNamespace] = match;
  if (serviceNamespace !== namespace) {
    throw new Error(
      `${url}: the certificate of a Service in namespace "${serviceNamespace}" is not issued into a Secret in "${namespace}"`,
    );
  }
  return [`${service}.${serviceNamespace}.svc`, `${service}.${serviceNamespace}.svc.cluster.local`];
}

/**
 * Why the certificate kept in a Secret is to be issued anew (undefined: it is good): none, a
 * certificate and key that do not belong together, another CA's, other hosts', or a third of its life
 * left.
 */
export function issueReason(
  kept: { cert: string; key: string } | undefined,
  ca: CertificateAuthority,
  hosts: readonly string[],
  now = new Date(),
): string | undefined {
  if (!kept) return 'there was none';
  let certificate: X509Certificate;
  try {
    certificate = new X509Certificate(kept.cert);
    if (!certificate.checkPrivateKey(createPrivateKey(kept.key)))
      return 'its key does not match the certificate';
  } catch {
    return 'it held no certificate and key';
  }
  if (!certificate.verify(new X509Certificate(ca.cert).publicKey)) return 'another CA signed it';
  const named = hostsOf({ ca, ...kept });
  // Asked of the certificate, which knows `::1` when it lists `0:0:0:0:0:0:0:1`.
  const names = (host: string) =>
    isIP(host)
      ? certificate.checkIP(host) !== undefined
      : certificate.checkHost(host, { wildcards: false }) !== undefined;
  if (named.length !== hosts.length || !hosts.every(names)) return `it named ${named.join(', ')}`;
  if (now >= renewalDue({ ca, ...kept })) return `it ends on ${new Date(certificate.validTo).toISOString()}`;
  return undefined;
}

/** What keeps the CA kept in a Secret from issuing certificates (undefined: nothing). */
export function authorityProblem(
  kept: { cert: string; key: string } | undefined,
  now = new Date(),
): string | undefined {
  if (!kept) return 'has no tls.crt and tls.key';
  let certificate: X509Certificate;
  try {
    certificate = new X509Certificate(kept.cert);
    if (!certificate.checkPrivateKey(createPrivateKey(kept.key)))
      return 'holds a key that does not match its certificate';
  } catch {
    return 'holds no certificate and key';
  }
  if (!certificate.ca)
    return `holds a certificate for ${certificate.subject.replaceAll('\n', ', ')}, not a CA`;
  if (Date.parse(certificate.validTo) <= now.getTime())
    return `holds a CA that ended on ${new Date(certificate.validTo).toISOString()}`;
  return undefined;
}

export interface FunctionCertificatesOptions {
  client: KubeClient;
  /** The Secret that keeps the CA. */
  authority: SecretName;
  /** How often the issued certificates are looked at. */
  checkMs: number;
  logger: Logger;
}

interface Kept {
  data: Record<string, string>;
  resourceVersion: string;
  ours: boolean;
}

export class FunctionCertificates {
  readonly name = 'function service certificates';
  readonly placement = 'every replica'; // every replica keeps the certificates of the services it calls
  readonly #options: FunctionCertificatesOptions;
  #ca: CertificateAuthority | undefined;
  /** By service name: where its certificate goes and what it names. */
  readonly #issued = new Map<string, { secret: SecretName; hosts: string[] }>();
  #timer: NodeJS.Timeout | undefined;
  #stopped = false;

  constructor(options: FunctionCertificatesOptions) {
    this.#options = options;
  }

  /** Reads the CA, or makes it (the first start): certificates can be issued once this resolves. */
  async start(): Promise<void> {
    const { authority, logger } = this.#options;
    const where = `Secret ${authority.namespace}/${authority.name}`;
    for (let attempt = 0; ; attempt++) {
      const kept = await this.#read(authority);
      if (kept) {
        const { 'tls.crt': cert, 'tls.key': key } = kept.data;
        const candidate = cert && key ? { cert, key } : undefined;
        const problem = authorityProblem(candidate);
        if (problem || !candidate)
          throw new Error(
            `${where} ${problem}: it is no CA to issue the function services' certificates with`,
          );
        this.#ca = candidate;
        break;
      }
      const ca = await newAuthority(CA_NAME);
      try {
        await this.#write(authority, { 'tls.crt': ca.cert, 'tls.key': ca.key }, undefined);
        logger.info(`made the CA of the function services' certificates, kept in ${where}`);
        this.#ca = ca;
        break;
      } catch (error) {
        // Another replica made it first: take that one.
        if (!(error instanceof ApiError && error.status === 409) || attempt > 2) throw error;
      }
    }
    this.#schedule();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
  }

  /**
   * The endpoint trusting only this CA, once its certificate is in its Secret (issued if due). An
   * endpoint without a certificate Secret is given back as it is.
   */
  async pin(endpoint: FunctionEndpoint): Promise<FunctionEndpoint> {
    if (!endpoint.certificate) return endpoint;
    const ca = this.#ca;
    if (!ca) throw new Error('the CA of the function services is not loaded yet');
    const secret = endpoint.certificate;
    const hosts = certificateHosts(endpoint.url, secret.namespace);
    await this.#keep(secret, hosts, ca);
    this.#issued.set(endpoint.name, { secret, hosts });
    return { ...endpoint, ca: ca.cert };
  }

  /** Stops renewing the certificate of a service no longer served. */
  release(name: string): void {
    this.#issued.delete(name);
  }

  #schedule(): void {
    if (this.#stopped) return;
    this.#timer = setTimeout(() => void this.#check(), this.#options.checkMs);
    this.#timer.unref();
  }

  async #check(): Promise<void> {
    const ca = this.#ca as CertificateAuthority;
    for (const [name, { secret, hosts }] of this.#issued) {
      try {
        await this.#keep(secret, hosts, ca);
      } catch (error) {
        // The one it has stays valid a third of its life: the next look tries again.
        this.#options.logger.warning(
          `the certificate of function service "${name}" in Secret ${secret.namespace}/${secret.name}: ${(error as Error).message}`,
        );
      }
    }
    this.#schedule();
  }

  /** Issues the certificate into the Secret when it is due; a 409 means another replica wrote first. */
  async #keep(secret: SecretName, hosts: string[], ca: CertificateAuthority): Promise<void> {
    const where = `Secret ${secret.namespace}/${secret.name}`;
    for (let attempt = 0; ; attempt++) {
      const kept = await this.#read(secret);
      if (kept && !kept.ours) {
        throw new Error(
          `${where} exists and is not a certificate this gateway made (type ${TLS_TYPE}, labelled ` +
            `app.kubernetes.io/managed-by=causeway): name another Secret, or delete this one`,
        );
      }
      const { 'tls.crt': cert, 'tls.key': key } = kept?.data ?? {};
      const reason = issueReason(cert && key ? { cert, key } : undefined, ca, hosts);
      if (reason === undefined) return;
      const issued = await issueServingCertificate(ca, hosts);
      try {
        await this.#write(
          secret,
          { 'tls.crt': issued.cert, 'tls.key': issued.key, 'ca.crt': ca.cert },
          kept?.resourceVersion,
        );
        this.#options.logger.info(`issued a certificate for ${hosts.join(', ')} into ${where} (${reason})`);
        return;
      } catch (error) {
        if (!(error instanceof ApiError && error.status === 409) || attempt > 2) throw error;
      }
    }
  }

  async #read(secret: SecretName): Promise<Kept | undefined> {
    const read = await ignoreNotFound(
      this.#options.client.get<{
        type?: string;
        data?: Record<string, string>;
        metadata: { resourceVersion: string; labels?: Record<string, string> };
      }>(secretPath(secret)),
    );
    if (!read) return undefined;
    const data: Record<string, string> = {};
    for (const [key, value] of Object.entries(read.data ?? {})) {
      data[key] = Buffer.from(value, 'base64').toString();
    }
    const ours =
      read.type === TLS_TYPE &&
      read.metadata.labels?.['app.kubernetes.io/managed-by'] ===
        MANAGED_BY_CAUSEWAY['app.kubernetes.io/managed-by'];
    return { data, resourceVersion: read.metadata.resourceVersion, ours };
  }

  /** Creates the Secret, or replaces the version read. */
  #write(secret: SecretName, files: Record<string, string>, resourceVersion: string | undefined) {
    return writeSecret(this.#options.client, secret, { type: TLS_TYPE, files }, resourceVersion);
  }
}
