/**
 * Admission, as an engine of the gateway: the webhook server of webhooks/ answers the apiserver, and
 * this engine decides through the gateway's one call path (one signed call per review to the function
 * service that has the handler), keeps the certificates, and keeps the webhook configurations in step
 * with the handlers served; on a graceful stop it removes all but the persistent webhooks.
 */
import { existsSync } from 'node:fs';
import type { DueHandler, HandlerSpec, KubernetesObject } from '../../protocol/index.ts';
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
import { type Webhook, webhookConfiguration, webhookOf, webhookPath } from '../../webhooks/configurations.ts';
import { jsonPatchOf } from '../../webhooks/patch.ts';
import {
  chooseMode,
  localHosts,
  localReach,
  ngrokReach,
  type Reach,
  type ReachMode,
  serviceReach,
  TunnelError,
  type Way,
} from '../../webhooks/reach.ts';
import type { ReviewRequest, Verdict } from '../../webhooks/review.ts';
import { startWebhookServer, type WebhookServer } from '../../webhooks/server.ts';
import { type CallSubject, callServices, idempotencyKey } from '../dispatch/calls.ts';
import type { FunctionService } from '../dispatch/function-service.ts';
import type { Identity } from '../identity.ts';
import type { KubeClient } from '../kube/client.ts';
import type { DiscoveredResource } from '../kube/discovery.ts';
import { ApiError, isNotFound } from '../kube/errors.ts';
import { type SecretName, secretPath, writeSecret } from '../kube/secrets.ts';
import type { Logger } from '../logging.ts';
import type { Part } from '../manager/manager.ts';
import { ALONE, type Role } from '../manager/role.ts';
import { objectMatches } from '../reactor/filters.ts';
import { hasFinalizer } from '../reactor/finalizers.ts';
import type { Settings } from '../settings.ts';
import { diff } from '../state/diff.ts';

export interface AdmissionOptions {
  client: KubeClient;
  identity: Identity;
  settings: Settings['admission'];
  /** The namespaces served, when the gateway serves named ones only. */
  namespaces: readonly string[] | undefined;
  /** Whether the gateway serves a namespace (it may serve patterns, which no selector can say). */
  serves(namespace: string | undefined): boolean;
  logger: Logger;
  /** Told of every review answered: the webhook (`other` for a path not served), its status, how long it took. */
  observeReview?: (webhook: string, status: number, tookMs: number) => void;
}

interface Served {
  webhook: Webhook;
  /** Decides here, without a call: the gateway's own webhooks. */
  local?: (object: KubernetesObject) => Verdict;
  service?: FunctionService;
  /** One, or those of the handler's category served so far. */
  resources: DiscoveredResource[];
  /** Its service was replaced: dropped at the next sync unless served again. */
  retired?: boolean;
}

/** The gateway's own webhook: not a handler's, so its "service" is the gateway. */
const OWN = 'causeway';

/** Mounted in every pod with a service account: with KUBERNETES_SERVICE_HOST, how a pod knows it is one. */
const SERVICE_ACCOUNT_TOKEN = '/var/run/secrets/kubernetes.io/serviceaccount/token';

/** A Secret's files, decoded, and the version they are of. */
interface SecretRead {
  data: Record<string, string>;
  resourceVersion: string;
}

/** The Secret of the webhook CA's keys, beside the serving Secret `secret`. */
const authorityName = (secret: SecretName) => `${secret.name}-ca`;

/** The apiserver gives up at the webhook's timeout: answer well before it. */
const DECISION_MARGIN_MS = 1000;
const KINDS = ['validating', 'mutating'] as const;
/** The longest a replica that others take over from waits for its connections to go: past Node's keep-alive timeout (5 s), after which idle ones go of themselves. */
const DRAIN_MS = 10_000;

export class Admission implements Part {
  readonly name = 'admission webhooks';
  readonly placement = 'every replica'; // every replica answers reviews
  readonly #options: AdmissionOptions;
  /** Whether other replicas of this identity run: the webhook configurations are theirs too, and stay at this one's stop. */
  #role: Role = ALONE;
  readonly #webhooks = new Map<string, Served>();
  #server: WebhookServer | undefined;
  /** Made and kept by the gateway, unless the user gives certificate files. */
  #certificates: Certificates | undefined;
  /** What the server serves and the configurations tell the apiserver to trust, from either. */
  #tls: { key: string; cert: string; bundle: string } | undefined;
  #filesStamp: string | undefined;
  #renewal: NodeJS.Timeout | undefined;
  #mode: Exclude<ReachMode, 'auto'> = 'local';
  #way: Way | undefined;

  constructor(options: AdmissionOptions) {
    this.#options = options;
  }

  /**
   * Adds the admission handlers of a service for a resource (for one more resource, when a handler by
   * category has its webhook already: one rule more). Like every change here, the apiserver
   * learns of it at start, or at the next `sync` once started: a set of changes goes out as one.
   */
  serve(service: FunctionService, handlers: readonly HandlerSpec[], resource: DiscoveredResource): void {
    for (const handler of handlers) {
      const key = webhookPath(service.name, handler.id);
      const before = this.#webhooks.get(key);
      const resources = [
        ...(before?.service === service && !before.retired ? before.resources : []).filter(
          (other) => other.plural !== resource.plural || other.group !== resource.group,
        ),
        resource,
      ];
      const webhook = webhookOf(service.name, handler, resources, this.#options.identity.annotationPrefix);
      this.#webhooks.set(key, { webhook, service, resources });
    }
  }

  /**
   * Retires the webhooks of a service's handlers (it was redeployed, or redirected): they keep
   * answering until the next `sync`, so that a review in between is not let through unchecked, and
   * those the new service serves again (`serve`) stay.
   */
  retire(service: FunctionService): void {
    for (const served of this.#webhooks.values()) if (served.service === service) served.retired = true;
  }

  /** Drops what is retired, and writes the configurations as the webhooks served now, once started. */
  async sync(): Promise<void> {
    for (const [key, served] of this.#webhooks) if (served.retired) this.#webhooks.delete(key);
    if (this.#server) await this.#configure();
  }

  /**
   * Puts our finalizer on objects of `resource` as they are created, when `needs` says so (the reactor's
   * finalizer rule): the finalizer then costs no PATCH of its own. Ignored on failure: the reactor
   * adds the finalizer itself if the webhook could not.
   */
  holdAtCreation(resource: DiscoveredResource, needs: (object: KubernetesObject) => boolean): void {
    const { finalizer, annotationPrefix } = this.#options.identity;
    const handler: HandlerSpec = {
      id: `finalizer/${resource.plural}.${resource.group}`,
      kind: 'mutate',
      resource: { name: resource.plural, group: resource.group, version: resource.version },
      options: { operations: ['CREATE'], ignoreFailures: true, timeout: 5 },
    };
    const webhook = webhookOf(OWN, handler, resource, annotationPrefix);
    const local = (object: KubernetesObject): Verdict => {
      if (!needs(object) || hasFinalizer(object, finalizer)) return { allowed: true };
      const patch = object.metadata.finalizers
        ? [{ op: 'add' as const, path: '/metadata/finalizers/-', value: finalizer }]
        : [{ op: 'add' as const, path: '/metadata/finalizers', value: [finalizer] }];
      return { allowed: true, patch };
    };
    this.#webhooks.set(webhook.path, { webhook, local, resources: [resource] });
  }

  get size(): number {
    return this.#webhooks.size;
  }

  /** Whether its webhook server listens: from its start until its stop (or a start that failed). */
  get serving(): boolean {
    return this.#server !== undefined;
  }

  /**
   * A review's webhook as `/<service>/<handler id>`, readable where its path is made of DNS labels:
   * `other` for one not served (a label must stay bounded).
   */
  #webhookOf(path: string): string {
    const served = this.#webhooks.get(path);
    return served ? `/${served.webhook.service}/${served.webhook.handler.id}` : 'other';
  }

  async start(role: Role): Promise<void> {
    this.#role = role;
    const { settings, logger, client, observeReview } = this.#options;
    this.#mode = chooseMode(settings.reach, {
      inPod: Boolean(process.env.KUBERNETES_SERVICE_HOST) && existsSync(SERVICE_ACCOUNT_TOKEN),
      apiserverHost: new URL(client.server).hostname,
    });
    if (this.#mode === 'service' && !settings.service) {
      throw new Error(
        'admission webhooks in a pod are reached through a Service: name it with --webhook-service',
      );
    }
    if (this.#mode === 'service' && settings.listen.port === 0) {
      // Any free port would be one the Service does not send the apiserver to.
      throw new Error(
        'admission webhooks reached through a Service listen at the port it sends the apiserver to (its targetPort): give it with --webhook-listen (settings.admission.listen), not port 0',
      );
    }
    if (settings.certificateFiles) {
      const loaded = await readCertificateFiles(settings.certificateFiles);
      this.#tls = loaded;
      this.#filesStamp = loaded.stamp;
    } else {
      this.#certificates = await this.#renewCertificates();
      this.#tls = { ...this.#certificates, bundle: caBundle(this.#certificates) };
    }
    this.#server = await startWebhookServer({
      host: settings.listen.host,
      port: settings.listen.port,
      key: this.#tls.key,
      cert: this.#tls.cert,
      decide: (review, path, signal) => this.#decide(review, path, signal),
      deadlineMs: (path) =>
        Math.max(500, (this.#webhooks.get(path)?.webhook.timeoutSeconds ?? 10) * 1000 - DECISION_MARGIN_MS),
      logger,
      ...(settings.clientCa ? { clientCa: settings.clientCa } : {}),
      ...(observeReview
        ? { observe: (path, status, tookMs) => observeReview(this.#webhookOf(path), status, tookMs) }
        : {}),
    });
    logger.info(`admission webhooks served at ${this.#server.url}`);
    try {
      this.#way = await (await this.#reach())({ host: settings.listen.host, port: this.#server.port });
    } catch (error) {
      await this.#server.close(); // nothing configured yet: nothing else to undo
      this.#server = undefined;
      throw error;
    }
    const { clientConfig } = this.#way;
    if ('url' in clientConfig) logger.info(`the apiserver reaches them at ${clientConfig.url}`);
    else {
      const { namespace, name, port } = clientConfig.service;
      logger.info(
        `the apiserver reaches them through the Service ${namespace}/${name} at https://${name}.${namespace}.svc:${port}`,
      );
    }
    await this.#configure();
    if (settings.certificateFiles) this.#watchFiles(settings.certificateFiles, settings.filesCheckIntervalMs);
    else this.#scheduleRenewal();
  }

  async stop(): Promise<void> {
    clearTimeout(this.#renewal);
    if (!this.#server) return;
    const last = await this.#last();
    if (last) await this.#configure({ persistentOnly: true });
    await this.#way?.close();
    // Others answer on: the apiserver's connections are handed to them without losing a review.
    await this.#server.close(last ? {} : { drainMs: DRAIN_MS });
    this.#server = undefined;
  }

  /**
   * Whether this is the last replica to stop, so that its webhooks (those not persistent) go with it.
   * When that cannot be known, they stay: a review refused for a missing gateway is safer than one let
   * through unchecked while others still serve.
   */
  async #last(): Promise<boolean> {
    const { logger } = this.#options;
    try {
      if (!(await this.#role.othersRunning())) return true;
      logger.info('other replicas run: their webhook configurations stay');
    } catch (error) {
      logger.warning('the webhook configurations stay: whether other replicas run is not known', {
        err: error,
      });
    }
    return false;
  }

  /** The way in for the mode chosen at start. */
  async #reach(): Promise<Reach> {
    const { settings } = this.#options;
    switch (this.#mode) {
      case 'service':
        return serviceReach(settings.service as NonNullable<typeof settings.service>);
      case 'ngrok': {
        const secret = settings.ngrok?.authtokenSecret;
        const authtoken = secret ? await this.#readAuthtoken(secret) : undefined;
        return ngrokReach({
          ...(authtoken ? { authtoken } : {}),
          ...(settings.ngrok?.domain ? { domain: settings.ngrok.domain } : {}),
          ...(settings.ngrok?.forward ? { forward: settings.ngrok.forward } : {}),
        });
      }
      default:
        return localReach(settings.url);
    }
  }

  async #readAuthtoken(secret: SecretName): Promise<string> {
    const read = await this.#options.client.get<{ data?: Record<string, string> }>(secretPath(secret));
    const token = read.data?.authtoken;
    if (!token) throw new TunnelError(`the Secret ${secret.namespace}/${secret.name} has no key "authtoken"`);
    return Buffer.from(token, 'base64').toString().trim();
  }

  async #decide(review: ReviewRequest, path: string, signal: AbortSignal): Promise<Verdict> {
    const served = this.#webhooks.get(path);
    // A handler gone (its service redeployed without it) while the apiserver still has its webhook.
    if (!served) return { allowed: true };
    const { webhook, service } = served;
    // The one under review, of those the webhook has a rule for (a handler's by category has several).
    const resource =
      served.resources.find(
        (candidate) =>
          candidate.group === review.resource.group && candidate.plural === review.resource.resource,
      ) ?? (served.resources[0] as DiscoveredResource);
    const object = review.object ?? review.oldObject;
    if (served.local)
      return object && this.#options.serves(review.namespace) ? served.local(object) : { allowed: true };
    if (!service) throw new Error(`no function service for the webhook at ${path}`);
    // What the apiserver could not filter (annotations, fields, namespace patterns) is filtered here.
    if (
      !object ||
      !this.#options.serves(review.namespace) ||
      !objectMatches(object, webhook.handler.filters)
    ) {
      return { allowed: true };
    }
    const update = review.operation === 'UPDATE' && review.oldObject && review.object;
    const due: DueHandler = {
      id: webhook.handler.id,
      retry: 0,
      started: new Date().toISOString(),
      idempotencyKey: idempotencyKey(review.uid, webhook.handler.id),
      ...(update
        ? { old: review.oldObject, new: review.object, diff: diff(review.oldObject, review.object) }
        : {}),
    };
    const subject: CallSubject = {
      reason: 'admission',
      resource,
      object,
      admission: {
        uid: review.uid,
        operation: review.operation,
        ...(review.subResource ? { subresource: review.subResource } : {}),
        dryRun: review.dryRun,
        userInfo: review.userInfo,
      },
      timeoutMs: webhook.timeoutSeconds * 1000 - DECISION_MARGIN_MS,
    };
    const log = this.#options.logger.child({ webhook: webhook.type, handler: webhook.handler.id });
    const [answer] = await callServices([{ service, handlers: [due] }], subject, [0], log);
    if (signal.aborted) throw new Error('no decision before the deadline');
    if (answer?.gone?.includes(webhook.handler.id)) {
      // Redeployed without it, as its webhook is about to be: answered as once the webhook is gone.
      log.info(
        `admission handler ${webhook.handler.id} is gone from "${service.name}": the review is let through, and its webhook goes`,
      );
      return { allowed: true };
    }
    const outcome = answer?.outcomes[webhook.handler.id];
    const warnings = outcome?.warnings ?? [];
    switch (outcome?.status) {
      case 'success':
      case 'skipped': {
        const patch =
          webhook.type === 'mutating' && outcome.patch ? jsonPatchOf(object, [outcome.patch]) : [];
        return { allowed: true, warnings, ...(patch.length > 0 ? { patch } : {}) };
      }
      case 'denied':
        return { allowed: false, status: { message: outcome.message, code: outcome.code }, warnings };
      default: {
        // The service could not be asked or failed to answer: the handler's failure policy decides.
        const why =
          outcome?.message ??
          (answer?.down ? 'the service is down (no calls until its health check passes)' : 'no outcome');
        const message = `admission handler ${webhook.handler.id} of "${service.name}" could not decide: ${why}`;
        log.error(message);
        if (webhook.handler.options?.ignoreFailures)
          return { allowed: true, warnings: [...warnings, message] };
        return { allowed: false, status: { message, code: 500 }, warnings };
      }
    }
  }

  /** Writes both configurations (server-side apply, as the gateway's field manager), or removes them. */
  async #configure({ persistentOnly = false } = {}): Promise<void> {
    const { client, identity, namespaces } = this.#options;
    if (!this.#server || !this.#tls) return;
    const webhooks = [...this.#webhooks.values()]
      .map(({ webhook }) => webhook)
      .filter((webhook) => !persistentOnly || webhook.persistent);
    if (!this.#way) return;
    const { clientConfig, bundle } = this.#way;
    for (const type of KINDS) {
      const configuration = webhookConfiguration(
        type,
        identity.annotationPrefix,
        webhooks,
        clientConfig,
        bundle ? this.#tls.bundle : undefined,
        namespaces,
      );
      const path = `/apis/admissionregistration.k8s.io/v1/${type}webhookconfigurations/${identity.annotationPrefix}`;
      if ((configuration.webhooks as unknown[]).length === 0) {
        try {
          await client.request(path, { method: 'DELETE' });
        } catch (error) {
          if (!isNotFound(error)) throw error;
        }
      } else {
        await client.patch(path, 'apply', configuration, {
          fieldManager: identity.fieldManager,
          force: true,
        });
      }
    }
  }

  /**
   * The certificates as kept (in the Secrets, when named), renewed when due: other hosts to name, or
   * their end near. Replicas race to keep theirs: the first write wins, the others take it. Certificates
   * kept the old way (the CA's key in the serving Secret) are kept on, moved to two Secrets.
   */
  async #renewCertificates(): Promise<Certificates> {
    const hosts = this.#hosts();
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
            `the webhook CA's key moved from the Secret ${secret.namespace}/${secret.name} to ${secret.namespace}/${authorityName(secret)}`,
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
      this.#readSecret({ ...secret, name: authorityName(secret) }),
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
        { ...secret, name: authorityName(secret) },
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

  #hosts(): string[] {
    const { settings } = this.#options;
    if (this.#mode === 'service' && settings.service) {
      const { name, namespace } = settings.service;
      return [
        name,
        `${name}.${namespace}`,
        `${name}.${namespace}.svc`,
        `${name}.${namespace}.svc.cluster.local`,
      ];
    }
    return localHosts(settings.listen.host, settings.url);
  }

  /**
   * To another certificate. When what vouches for it changes too, the apiserver is told to trust both
   * the old and the new first, then the certificate changes, then the old trust goes.
   */
  async #switchTo(tls: { key: string; cert: string; bundle: string }): Promise<void> {
    const previous = this.#tls;
    const bundleChanged = tls.bundle !== previous?.bundle;
    if (bundleChanged && previous) {
      this.#tls = { ...previous, bundle: previous.bundle + tls.bundle };
      await this.#configure();
    }
    this.#server?.setCertificate(tls.key, tls.cert);
    this.#tls = tls;
    if (bundleChanged) await this.#configure();
  }

  /** The user's files, read again when they change (as cert-manager renews them), every `intervalMs`. */
  #watchFiles(files: CertificateFiles, intervalMs: number): void {
    this.#renewal = setTimeout(async () => {
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
      if (this.#server) this.#watchFiles(files, intervalMs);
    }, intervalMs);
    this.#renewal.unref();
  }

  /** Renews the serving certificate ahead of its end: the CA stays, so the bundle and the apiserver's trust do too. */
  #scheduleRenewal(): void {
    if (!this.#certificates) return;
    const inMs = Math.max(60_000, renewalDue(this.#certificates).getTime() - Date.now());
    this.#renewal = setTimeout(
      async () => {
        try {
          const renewed = await this.#renewCertificates();
          if (renewed !== this.#certificates) {
            this.#certificates = renewed;
            await this.#switchTo({ ...renewed, bundle: caBundle(renewed) });
          }
        } catch (error) {
          this.#options.logger.error('renewing the webhook certificate failed', { err: error });
        }
        this.#scheduleRenewal();
      },
      Math.min(inMs, 2 ** 31 - 1),
    );
    this.#renewal.unref();
  }
}
