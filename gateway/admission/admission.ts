/**
 * Admission, as an engine of the gateway: the webhook server of webhooks/ answers the apiserver, and
 * this engine decides through the gateway's one call path (reviews.ts), keeps the certificates
 * (certificates.ts) and where the apiserver reaches the server (reach.ts), and keeps the webhook
 * configurations in step with the handlers served (configurations.ts); on a graceful stop it removes
 * all but the persistent webhooks.
 */
import type { HandlerSpec, KubernetesObject } from '../../protocol/index.ts';
import type { Way } from '../../webhooks/reach.ts';
import { startWebhookServer, type WebhookServer } from '../../webhooks/server.ts';
import type { FunctionService } from '../dispatch/function-service.ts';
import type { Refusals } from '../dispatch/refusals.ts';
import type { Identity } from '../identity.ts';
import type { KubeClient } from '../kube/client.ts';
import type { DiscoveredResource } from '../kube/discovery.ts';
import type { Logger } from '../logging.ts';
import type { Part } from '../manager/manager.ts';
import { ALONE, type Role } from '../manager/role.ts';
import type { Settings } from '../settings.ts';
import { ServingCertificates } from './certificates.ts';
import { Configurations } from './configurations.ts';
import { certificateHosts, reachMode, reachServer } from './reach.ts';
import { OWN, Reviews } from './reviews.ts';

export interface AdmissionOptions {
  client: KubeClient;
  identity: Identity;
  settings: Settings['admission'];
  /** The namespaces served, when the gateway serves named ones only. */
  namespaces: readonly string[] | undefined;
  /** The gateway's own namespace, which its webhook configurations leave out (GatewayOptions.ownNamespace). */
  ownNamespace?: string | undefined;
  /** Whether the gateway serves a namespace (it may serve patterns, which no selector can say). */
  serves(namespace: string | undefined): boolean;
  logger: Logger;
  /** Told of every review answered: the webhook (`other` for a path not served), its status, how long it took. */
  observeReview?: (webhook: string, status: number, tookMs: number) => void;
  /** Where a service whose webhooks the apiserver refuses is said to be refused (and no longer, once taken). */
  refusals?: Refusals;
}

/** The longest a replica that others take over from waits for its connections to go: past Node's keep-alive timeout (5 s), after which idle ones go of themselves. */
const DRAIN_MS = 10_000;

export class Admission implements Part {
  readonly name = 'admission webhooks';
  readonly placement = 'every replica'; // every replica answers reviews
  readonly #options: AdmissionOptions;
  /** Whether other replicas of this identity run: the webhook configurations are theirs too, and stay at this one's stop. */
  #role: Role = ALONE;
  readonly #reviews: Reviews;
  readonly #configurations: Configurations;
  readonly #certificates: ServingCertificates;
  #server: WebhookServer | undefined;
  #way: Way | undefined;
  /** The services whose webhooks the apiserver refused at the last write. */
  #refused = new Set<string>();

  constructor(options: AdmissionOptions) {
    this.#options = options;
    this.#reviews = new Reviews(options);
    this.#configurations = new Configurations(options);
    this.#certificates = new ServingCertificates(options, {
      trust: () => this.#configure(),
      serve: (key, cert) => this.#server?.setCertificate(key, cert),
      serving: () => this.#server !== undefined,
    });
  }

  /**
   * Adds the admission handlers of a service for a resource (for one more resource, when a handler by
   * category has its webhook already: one rule more). Like every change here, the apiserver
   * learns of it at start, or at the next `sync` once started: a set of changes goes out as one.
   */
  serve(service: FunctionService, handlers: readonly HandlerSpec[], resource: DiscoveredResource): void {
    this.#reviews.serve(service, handlers, resource);
  }

  /**
   * Retires the webhooks of a service's handlers (it was redeployed, or redirected): they keep
   * answering until the next `sync`, so that a review in between is not let through unchecked, and
   * those the new service serves again (`serve`) stay.
   */
  retire(service: FunctionService): void {
    this.#reviews.retire(service);
  }

  /** Drops what is retired, and writes the configurations as the webhooks served now, once started. */
  async sync(): Promise<void> {
    this.#reviews.dropRetired();
    if (this.#server) await this.#configure();
  }

  /** The gateway's own webhook that puts its finalizer on at creation (see Reviews.holdAtCreation). */
  holdAtCreation(resource: DiscoveredResource, needs: (object: KubernetesObject) => boolean): void {
    this.#reviews.holdAtCreation(resource, needs);
  }

  /** Whether its webhook server listens: from its start until its stop (or a start that failed). */
  get serving(): boolean {
    return this.#server !== undefined;
  }

  async start(role: Role): Promise<void> {
    this.#role = role;
    const { settings, logger, client, observeReview } = this.#options;
    const mode = reachMode(settings, client, logger);
    const tls = await this.#certificates.load(certificateHosts(mode, settings));
    this.#server = await startWebhookServer({
      host: settings.listen.host,
      port: settings.listen.port,
      key: tls.key,
      cert: tls.cert,
      decide: (review, path, signal) => this.#reviews.decide(review, path, signal),
      deadlineMs: (path) => this.#reviews.deadlineMs(path),
      logger,
      ...(settings.clientCa ? { clientCa: settings.clientCa } : {}),
      ...(observeReview
        ? { observe: (path, status, tookMs) => observeReview(this.#reviews.nameOf(path), status, tookMs) }
        : {}),
    });
    logger.info(`admission webhooks served at ${this.#server.url}`);
    try {
      this.#way = await reachServer(mode, this.#options, this.#server.port);
    } catch (error) {
      await this.#server.close(); // nothing configured yet: nothing else to undo
      this.#server = undefined;
      throw error;
    }
    await this.#configure();
    this.#certificates.keep();
  }

  async stop(): Promise<void> {
    await this.#certificates.stop();
    if (!this.#server) return;
    const last = await this.#configurations.lastToStop(this.#role);
    if (last) await this.#configure({ persistentOnly: true });
    await this.#way?.close();
    // Others answer on: the apiserver's connections are handed to them without losing a review.
    await this.#server.close(last ? {} : { drainMs: DRAIN_MS });
    this.#server = undefined;
  }

  /** Writes both configurations as the webhooks served now (at the last stop, the persistent ones), once reached. */
  async #configure({ persistentOnly = false } = {}): Promise<void> {
    const bundle = this.#certificates.bundle;
    if (!this.#server || bundle === undefined || !this.#way) return;
    const webhooks = this.#reviews.webhooks().filter((webhook) => !persistentOnly || webhook.persistent);
    const refused = await this.#configurations.write(webhooks, this.#way, bundle, OWN);
    if (persistentOnly) return;
    // Each service's admission is refused, or taken, on its own: the others' are configured either way.
    const { refusals } = this.#options;
    const services = new Set(webhooks.map((webhook) => webhook.service));
    for (const service of new Set([...this.#refused, ...services])) {
      const why = refused.get(service);
      if (why) refusals?.refuse(service, 'webhooks', why);
      else refusals?.clear(service, 'webhooks');
    }
    this.#refused = new Set(refused.keys());
  }
}
