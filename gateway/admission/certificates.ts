/**
 * The webhook server's certificates: the user's files (read again when they change), or made by the
 * gateway, kept in Secrets when named (so restarts and replicas share them) and renewed ahead of their
 * end. A change of what the apiserver is to trust goes out in the webhook configurations first.
 */
import {
  type CertificateFiles,
  type Certificates,
  caBundle,
  keptCertificates,
  keptFiles,
  readCertificateFiles,
  renewalDue,
  renewCertificates,
} from '../../webhooks/certificates.ts';
import { ApiError, isNotFound } from '../kube/errors.ts';
import { type SecretName, secretPath, webhookAuthoritySecret, writeSecret } from '../kube/secrets.ts';
import type { AdmissionOptions } from './admission.ts';

/** What the server serves and the configurations tell the apiserver to trust. */
export interface Tls {
  key: string;
  cert: string;
  bundle: string;
}

/** What a certificate that changes, once served, changes. */
export interface Serving {
  /** Writes the configurations again, with the bundle to trust as it is now. */
  trust(): Promise<void>;
  /** Serves another certificate from now on. */
  serve(key: string, cert: string): void;
  /** Whether the server serves: the files are looked at again only while it does. */
  serving(): boolean;
}

/** A Secret's files, decoded, and the version they are of. */
interface SecretRead {
  data: Record<string, string>;
  resourceVersion: string;
}

/** The Secret of the webhook CA's keys, beside the serving Secret `secret`. */

export class ServingCertificates {
  readonly #options: Pick<AdmissionOptions, 'client' | 'settings' | 'logger'>;
  readonly #serving: Serving;
  /** Those the certificate names. */
  #hosts: string[] = [];
  /** Made and kept by the gateway, unless the user gives certificate files. */
  #certificates: Certificates | undefined;
  /** From either. */
  #tls: Tls | undefined;
  #filesStamp: string | undefined;
  #renewal: NodeJS.Timeout | undefined;
  /** A renewal or a look at the files under way: the stop waits for it, and nothing is scheduled after. */
  #looking: Promise<void> | undefined;
  #stopped = false;

  constructor(options: Pick<AdmissionOptions, 'client' | 'settings' | 'logger'>, serving: Serving) {
    this.#options = options;
    this.#serving = serving;
  }

  /** What the apiserver is to trust now: undefined until `load`. */
  get bundle(): string | undefined {
    return this.#tls?.bundle;
  }

  /** The certificate to serve first: the user's, or the one kept (made, or renewed when due, for `hosts`). */
  async load(hosts: string[]): Promise<Tls> {
    const { certificateFiles } = this.#options.settings;
    this.#hosts = hosts;
    if (certificateFiles) {
      const loaded = await readCertificateFiles(certificateFiles);
      this.#tls = loaded;
      this.#filesStamp = loaded.stamp;
    } else {
      this.#certificates = await this.#renewCertificates();
      this.#tls = { ...this.#certificates, bundle: caBundle(this.#certificates) };
    }
    return this.#tls;
  }

  /** Once served: the user's files read again when they change, or the certificate renewed when due. */
  keep(): void {
    const { certificateFiles, filesCheckIntervalMs } = this.#options.settings;
    if (certificateFiles) this.#watchFiles(certificateFiles, filesCheckIntervalMs);
    else this.#scheduleRenewal();
  }

  /** Stops renewing; resolves once a renewal under way (its Secrets written, its certificate served) is done. */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#renewal);
    await this.#looking;
  }

  /**
   * The certificates as kept (in the Secrets, when named), renewed when due: other hosts to name, or
   * their end near. Replicas race to keep theirs: the first write wins, the others take it. Certificates
   * kept the old way (the CA's key in the serving Secret) are kept on, moved to two Secrets.
   */
  async #renewCertificates(): Promise<Certificates> {
    const hosts = this.#hosts;
    const secret = this.#options.settings.certificates;
    for (let attempt = 0; ; attempt++) {
      const kept = secret ? await this.#readSecrets(secret) : undefined;
      const { certificates, changed } = await renewCertificates(
        kept?.certificates ?? this.#certificates,
        hosts,
      );
      if (!changed && !kept?.outdated) return certificates;
      try {
        if (secret && kept) await this.#writeSecrets(secret, certificates, kept);
        const { logger } = this.#options;
        if (changed) logger.info(`admission webhook certificate made for ${hosts.join(', ')}`);
        else if (secret) {
          logger.info(
            `the webhook CA's key moved from the Secret ${secret.namespace}/${secret.name} to ${secret.namespace}/${webhookAuthoritySecret(secret).name}`,
          );
        }
        return certificates;
      } catch (error) {
        if (!(error instanceof ApiError && error.status === 409) || attempt > 2) throw error;
      }
    }
  }

  /** Both Secrets as read: the serving pair and the CA's (see keptFiles). */
  async #readSecrets(secret: SecretName) {
    const [serving, authority] = await Promise.all([
      this.#readSecret(secret),
      this.#readSecret(webhookAuthoritySecret(secret)),
    ]);
    return { ...keptCertificates(serving?.data, authority?.data), serving, authority };
  }

  async #readSecret(secret: SecretName): Promise<SecretRead | undefined> {
    try {
      const read = await this.#options.client.get<{
        data?: Record<string, string>;
        metadata: { resourceVersion: string };
      }>(secretPath(secret));
      const data = Object.fromEntries(
        Object.entries(read.data ?? {}).map(([key, value]) => [key, Buffer.from(value, 'base64').toString()]),
      );
      return { data, resourceVersion: read.metadata.resourceVersion };
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
  }

  /**
   * The CA's Secret first (when it changed), then the serving one: a move from the old layout never
   * leaves the CA's key nowhere. Each replaces the version read; a 409 means another replica wrote first.
   */
  async #writeSecrets(
    secret: SecretName,
    certificates: Certificates,
    kept: { serving?: SecretRead; authority?: SecretRead },
  ): Promise<void> {
    const files = keptFiles(certificates);
    const sameAuthority =
      kept.authority &&
      Object.keys(files.authority).length === Object.keys(kept.authority.data).length &&
      Object.entries(files.authority).every(([key, value]) => kept.authority?.data[key] === value);
    if (!sameAuthority) {
      await this.#writeSecret(
        webhookAuthoritySecret(secret),
        files.authority,
        kept.authority?.resourceVersion,
      );
    }
    await this.#writeSecret(secret, files.serving, kept.serving?.resourceVersion);
  }

  /** Creates the Secret, or replaces the version read. */
  #writeSecret(secret: SecretName, files: Record<string, string>, resourceVersion: string | undefined) {
    return writeSecret(this.#options.client, secret, { type: 'Opaque', files }, resourceVersion);
  }

  /**
   * To another certificate. When what vouches for it changes too, the apiserver is told to trust both
   * the old and the new first, then the certificate changes, then the old trust goes.
   */
  async #switchTo(tls: Tls): Promise<void> {
    const previous = this.#tls;
    const bundleChanged = tls.bundle !== previous?.bundle;
    if (bundleChanged && previous) {
      this.#tls = { ...previous, bundle: previous.bundle + tls.bundle };
      await this.#serving.trust();
    }
    this.#serving.serve(tls.key, tls.cert);
    this.#tls = tls;
    if (bundleChanged) await this.#serving.trust();
  }

  /** The user's files, read again when they change (as cert-manager renews them), every `intervalMs`. */
  #watchFiles(files: CertificateFiles, intervalMs: number): void {
    this.#renewal = setTimeout(() => {
      this.#looking = (async () => {
        try {
          const loaded = await readCertificateFiles(files);
          if (loaded.stamp !== this.#filesStamp) {
            this.#filesStamp = loaded.stamp;
            await this.#switchTo(loaded);
            this.#options.logger.info(`webhook certificate read again from ${files.cert}`);
          }
        } catch (error) {
          // A renewal caught half-written: the next look finds it whole.
          this.#options.logger.warning('reading the webhook certificate files failed', { err: error });
        }
        if (!this.#stopped && this.#serving.serving()) this.#watchFiles(files, intervalMs);
      })();
    }, intervalMs);
    this.#renewal.unref();
  }

  /** Renews the serving certificate ahead of its end: the CA stays, so the bundle and the apiserver's trust do too. */
  #scheduleRenewal(): void {
    if (!this.#certificates) return;
    const inMs = Math.max(60_000, renewalDue(this.#certificates).getTime() - Date.now());
    this.#renewal = setTimeout(
      () => {
        this.#looking = (async () => {
          try {
            const renewed = await this.#renewCertificates();
            if (renewed !== this.#certificates) {
              this.#certificates = renewed;
              await this.#switchTo({ ...renewed, bundle: caBundle(renewed) });
            }
          } catch (error) {
            this.#options.logger.error('renewing the webhook certificate failed', { err: error });
          }
          if (!this.#stopped) this.#scheduleRenewal();
        })();
      },
      Math.min(inMs, 2 ** 31 - 1),
    );
    this.#renewal.unref();
  }
}
