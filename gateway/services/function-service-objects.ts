/**
 * Function services as Kubernetes objects: a `FunctionService` (causeway.dev/v1alpha1) in the
 * namespace the gateway is told to look in (`--function-services`) names a service's URL and how to
 * trust and call it. Adding, changing and removing one takes effect without a restart, and its status
 * says what the gateway found (the protocol and handlers, or the last error), whether the service is
 * down now, and where its calls go while a dev session, held in its `devSession` field, sends them to
 * a laptop. Services given with `--functions` are served beside them.
 *
 * Whoever may edit a FunctionService is not trusted as the gateway is: its `url` may not reach the
 * gateway's own host or the cloud metadata service (services/function-service-urls.ts), its dev sessions
 * are followed only as its `spec.devSessions` allows, and it cannot take over a `serviceName` another
 * FunctionService already has: the older object keeps it.
 */
import { encodeSecret, type KubernetesObject } from '../../protocol/index.ts';
import { isObject } from '../../protocol/json.ts';
import { SERVICE_ACCOUNT_PATTERN } from '../../protocol/schema/manifest.ts';
import { ServiceError } from '../dispatch/function-service.ts';
import { isRefusal } from '../dispatch/refusals.ts';
import { parseScope } from '../dispatch/scope.ts';
import type { FunctionEndpoint, FunctionServices, ServiceState } from '../dispatch/services.ts';
import type { KubeClient } from '../kube/client.ts';
import { ignoreNotFound } from '../kube/errors.ts';
import { postEvents } from '../kube/events.ts';
import { ownSecrets, secretPath } from '../kube/secrets.ts';
import { Watcher } from '../kube/watcher.ts';
import { escapeControls, type Logger } from '../logging.ts';
import type { Part } from '../manager/manager.ts';
import { ALONE, type Role } from '../manager/role.ts';
import { Serial } from '../serial.ts';
import type { Settings } from '../settings.ts';
import { backoffDelay } from '../timing.ts';
import {
  DEFAULT_DEV_SESSION_SECONDS,
  type DevSession,
  type DevSessionRoutes,
  type DevSessionsAllowed,
} from './dev-sessions.ts';
import { functionServiceUrlProblem, refusingLocal } from './function-service-urls.ts';

export const FUNCTION_SERVICE = { group: 'causeway.dev', version: 'v1alpha1', plural: 'functionservices' };

/**
 * `causeway dev` renews its session in this annotation, not in the spec: a renewal then changes no
 * generation, and the gateway writes no status for it.
 */
export const DEV_SESSION_RENEWED = `${FUNCTION_SERVICE.group}/dev-session-renewed`;

/** The API path of the FunctionService objects in `namespace`. */
export function functionServicesPath(namespace: string): string {
  const { group, version, plural } = FUNCTION_SERVICE;
  return `/apis/${group}/${version}/namespaces/${encodeURIComponent(namespace)}/${plural}`;
}

/** The name a FunctionService's service answers to: its `spec.serviceName`, or the object's name. */
export function serviceNameOf(object: KubernetesObject): string {
  const spec = isObject(object.spec) ? object.spec : {};
  return typeof spec.serviceName === 'string' ? spec.serviceName : object.metadata.name;
}

/** What a FunctionService's `spec.devSessions` allows, or undefined when it allows none. */
export function devSessionsAllowedBy(object: KubernetesObject): DevSessionsAllowed | undefined {
  const devSessions = isObject(object.spec) ? object.spec.devSessions : undefined;
  if (!isObject(devSessions) || devSessions.allowed !== true || !Array.isArray(devSessions.urls))
    return undefined;
  const maxSeconds = devSessions.maxSeconds;
  return {
    urls: devSessions.urls.filter((url): url is string => typeof url === 'string'),
    maxSeconds: typeof maxSeconds === 'number' && maxSeconds > 0 ? maxSeconds : DEFAULT_DEV_SESSION_SECONDS,
  };
}

/**
 * How to call the service a FunctionService names: its URL and the name it answers to, the secret it
 * shares (from the Secret of its `secretRef`, in its namespace), the CA to trust, and its pinned scope.
 */
export async function functionServiceEndpoint(
  client: KubeClient,
  object: KubernetesObject,
): Promise<FunctionEndpoint> {
  const namespace = object.metadata.namespace ?? 'default';
  const spec = object.spec as {
    url: string;
    secretRef?: { name: string; key?: string };
    caBundle?: string;
    tls?: { secretName: string };
    timeoutSeconds?: number;
    concurrency?: number;
    scope?: unknown;
  };
  let secret: Uint8Array | undefined;
  if (spec.secretRef) {
    const { name, key = 'secret' } = spec.secretRef;
    const read = await client.get<{ data?: Record<string, string> }>(secretPath({ namespace, name }));
    const value = Object.hasOwn(read.data ?? {}, key) ? read.data?.[key] : undefined;
    if (!value) throw new Error(`the Secret ${name} has no key "${key}"`);
    // As text, as a service reads it from its environment; checked for length.
    secret = encodeSecret(Buffer.from(value, 'base64').toString().trim());
  }
  return {
    name: serviceNameOf(object),
    url: spec.url,
    namespace,
    ...(secret ? { secret } : {}),
    ...(spec.caBundle ? { ca: spec.caBundle } : {}),
    ...(spec.tls ? { certificate: { namespace, name: spec.tls.secretName } } : {}),
    ...(spec.timeoutSeconds ? { timeoutMs: spec.timeoutSeconds * 1000 } : {}),
    ...(spec.concurrency ? { concurrency: spec.concurrency } : {}),
    ...(spec.scope === undefined ? {} : { scope: parseScope(spec.scope, 'spec.scope') }),
  };
}

/** The older of two FunctionServices naming the same service keeps it: by creationTimestamp, then name. */
function older(a: KubernetesObject, b: KubernetesObject): boolean {
  const [at, bt] = [String(a.metadata.creationTimestamp ?? ''), String(b.metadata.creationTimestamp ?? '')];
  return at !== bt ? at < bt : a.metadata.name < b.metadata.name;
}

/** The CustomResourceDefinition, as `causeway crd` prints it for `kubectl apply -f -`. */
export function functionServiceDefinition(): KubernetesObject {
  const { group, version, plural } = FUNCTION_SERVICE;
  const positive = (description: string, maximum?: number) => ({
    type: 'integer',
    minimum: 1,
    ...(maximum ? { maximum } : {}),
    description,
  });
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${plural}.${group}` } as KubernetesObject['metadata'],
    spec: {
      group,
      scope: 'Namespaced',
      names: { kind: 'FunctionService', plural, singular: 'functionservice', shortNames: ['fns'] },
      versions: [
        {
          name: version,
          served: true,
          storage: true,
          subresources: { status: {} },
          additionalPrinterColumns: [
            { name: 'URL', type: 'string', jsonPath: '.spec.url' },
            { name: 'Phase', type: 'string', jsonPath: '.status.phase' },
            { name: 'Dev session', type: 'string', jsonPath: '.status.devSession.holder' },
            { name: 'Error', type: 'string', jsonPath: '.status.lastError', priority: 1 },
            { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
          ],
          schema: {
            openAPIV3Schema: {
              type: 'object',
              properties: {
                spec: {
                  type: 'object',
                  required: ['url'],
                  properties: {
                    url: {
                      type: 'string',
                      pattern: '^https?://',
                      description:
                        'The base URL of the service: no user, query or fragment; no loopback or link-local host unless the gateway allows them (--allow-loopback-functions).',
                    },
                    serviceName: {
                      type: 'string',
                      pattern: '^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$',
                      description:
                        "The name it must answer to, which calls are signed for; the object's name unless given.",
                    },
                    secretRef: {
                      type: 'object',
                      required: ['name'],
                      properties: { name: { type: 'string' }, key: { type: 'string', default: 'secret' } },
                      description:
                        "A Secret in this namespace holding a secret shared with this service alone (HS256), instead of the gateway's signing keys.",
                    },
                    caBundle: {
                      type: 'string',
                      description: 'PEM of the CA to trust for an https URL; the system roots unless given.',
                    },
                    tls: {
                      type: 'object',
                      required: ['secretName'],
                      properties: {
                        secretName: {
                          type: 'string',
                          maxLength: 253,
                          pattern: '^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$',
                        },
                      },
                      description:
                        "The Secret in this namespace the gateway issues the service's serving certificate into (the pod mounts it for serve --tls-cert/--tls-key), for the host of its https url (<service>.<this namespace>.svc); the service is then trusted with the gateway's own CA only (--function-certificates).",
                    },
                    timeoutSeconds: positive(
                      "How long one call may take (default: the gateway's --function-timeout).",
                      600,
                    ),
                    concurrency: positive(
                      "Calls to it at once (default: the gateway's --function-concurrency).",
                    ),
                    scope: {
                      type: 'object',
                      required: ['resources'],
                      properties: {
                        ...Object.fromEntries(
                          (
                            [
                              [
                                'resources',
                                'What its handlers may watch, be sent and patch (plural.group; * for all).',
                              ],
                              ['admission', 'What its admission handlers may review; none unless given.'],
                              [
                                'children',
                                "The kinds its apply may create or update, in the handled object's namespace.",
                              ],
                              [
                                'namespaces',
                                'Narrows the namespaces its handlers see: names, globs, negations.',
                              ],
                              [
                                'secrets',
                                'The Secrets (by name) the pods of its children may mount or reference; none unless given.',
                              ],
                            ] as const
                          ).map(([field, description]) => [
                            field,
                            { type: 'array', items: { type: 'string' }, maxItems: 256, description },
                          ]),
                        ),
                        serviceAccount: {
                          type: 'string',
                          maxLength: 253,
                          description:
                            'The ServiceAccount the pods of its children may run as (default: default).',
                        },
                        impersonate: {
                          type: 'string',
                          pattern: SERVICE_ACCOUNT_PATTERN,
                          description:
                            "<namespace>/<name>: the ServiceAccount a gateway run with --impersonate writes the service's children and events as (default: the service's name in this namespace).",
                        },
                      },
                      description:
                        'What the service may reach through the gateway, pinned: a manifest declaring more is refused, and its answers are held to it. Required unless the gateway runs with --unscoped.',
                    },
                    devSessions: {
                      type: 'object',
                      required: ['allowed', 'urls'],
                      properties: {
                        allowed: { type: 'boolean' },
                        urls: {
                          type: 'array',
                          items: { type: 'string', pattern: '^https?://' },
                          description:
                            'Globs a session URL must match, e.g. https://*.ngrok.app; * stands for characters other than / and :.',
                        },
                        maxSeconds: positive(
                          `The longest a session lasts without renewal (default ${DEFAULT_DEV_SESSION_SECONDS}).`,
                          86_400,
                        ),
                      },
                      description:
                        'Whether dev sessions (causeway dev) may send its calls elsewhere, and where to: none unless allowed.',
                    },
                    devSession: {
                      type: 'object',
                      required: ['url', 'durationSeconds'],
                      properties: {
                        url: { type: 'string', pattern: '^https?://' },
                        revision: { type: 'string' },
                        holder: { type: 'string' },
                        durationSeconds: { type: 'integer', minimum: 1 },
                      },
                      description: `Written by \`causeway dev\`: the service's calls go to this URL while the annotation ${DEV_SESSION_RENEWED} is renewed within durationSeconds.`,
                    },
                  },
                },
                status: {
                  type: 'object',
                  properties: {
                    phase: { type: 'string', enum: ['Ready', 'Unreachable', 'Refused'] },
                    protocol: { type: 'string' },
                    handlers: { type: 'array', items: { type: 'string' } },
                    lastError: { type: 'string' },
                    observedGeneration: { type: 'integer' },
                    devSession: {
                      type: 'object',
                      properties: { url: { type: 'string' }, holder: { type: 'string' } },
                      description: 'Where its calls go while a dev session lasts.',
                    },
                  },
                },
              },
            },
          },
        },
      ],
    },
  };
}

export interface FunctionServiceObjectsOptions {
  client: KubeClient;
  namespace: string;
  services: FunctionServices;
  /** Where the dev sessions these objects hold send their service's calls. */
  routes: DevSessionRoutes;
  settings: Settings;
  logger: Logger;
  /** The services the gateway was given otherwise (--functions, in its process): no FunctionService takes their names. */
  given: ReadonlySet<string>;
}

export interface Known {
  /** The newest the gateway saw or wrote: its status is what a write is compared with. */
  object: KubernetesObject;
  serviceName: string;
  /** The spec the service is served by, as JSON: a dev session's field changes it not. */
  endpoint: string;
  /** What it found, once served. */
  served?: { protocol: string; handlers: string[] };
  /** Why the newest spec is not served. */
  error?: string;
  /** The error refuses the service as deployed (its manifest malformed or beyond its pin), not an outage; tried again all the same. */
  refused?: boolean;
  /** Why the gateway will not serve it as it is (its URL, a serviceName another object has): not retried. */
  refusal?: string;
  /** The next attempt, while the service could not be served. */
  retry?: NodeJS.Timeout;
  failures: number;
  /** Where a dev session sent its calls, as last told in an Event. */
  away?: string;
}

export class FunctionServiceObjects implements Part {
  readonly name = 'function service objects';
  readonly placement = 'every replica'; // every replica calls the services
  readonly #options: FunctionServiceObjectsOptions;
  readonly #watcher: Watcher;
  /** By object name. */
  readonly #known = new Map<string, Known>();
  /** One change at a time, in the order the watch told them. */
  readonly #changes = new Serial();
  #stopped = false;
  #unlisten: (() => void) | undefined;
  readonly #path: string;
  /**
   * Whether this replica posts the Events every replica sees the reason for: only the one that leads,
   * so that each is posted once.
   */
  #role: Role = ALONE;

  constructor(options: FunctionServiceObjectsOptions) {
    this.#options = options;
    this.#path = functionServicesPath(options.namespace);
    this.#watcher = new Watcher({
      client: options.client,
      path: this.#path,
      logger: options.logger.child({ watching: 'function services', namespace: options.namespace }),
      settings: options.settings.watching,
      onEvent: ({ type, object }) =>
        this.#serially(() => (type === 'DELETED' ? this.#forget(object) : this.#observe(object))),
    });
  }

  start(role: Role): void {
    this.#role = role;
    // A service going down or coming back, or sent to a laptop, shows in its object's status.
    this.#unlisten = this.#options.services.onStateChange((serviceName) => {
      const known = this.#holderOf(serviceName);
      if (known) this.#serially(() => this.#stateChanged(known));
    });
    this.#watcher.start();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#unlisten?.();
    for (const known of this.#known.values()) clearTimeout(known.retry);
    await this.#watcher.stop();
    await this.#changes.idle();
  }

  /** What the FunctionService that has the service named `serviceName` allows of dev sessions. */
  devSessionsAllowed(serviceName: string): DevSessionsAllowed | undefined {
    const known = this.#holderOf(serviceName);
    return known && devSessionsAllowedBy(known.object);
  }

  /** The FunctionService that has the service named `serviceName`: the oldest naming it; none for one given otherwise. */
  #holderOf(serviceName: string): Known | undefined {
    if (this.#options.given.has(serviceName)) return undefined;
    let holder: Known | undefined;
    for (const known of this.#known.values()) {
      if (known.serviceName === serviceName && (!holder || older(known.object, holder.object)))
        holder = known;
    }
    return holder;
  }

  #serially(change: () => Promise<void>): void {
    void this.#changes.run(change).catch((error) => {
      this.#options.logger.error('serving FunctionService objects failed', { err: error });
    });
  }

  /** A new or changed endpoint is served anew, a dev session's field is followed, and the status tells. */
  async #observe(object: KubernetesObject, again = false): Promise<void> {
    const { name } = object.metadata;
    const { devSession, devSessions: _, ...endpointSpec } = isObject(object.spec) ? object.spec : {};
    const serviceName = serviceNameOf(object);
    const endpoint = JSON.stringify(endpointSpec);
    let known = this.#known.get(name);
    if (known) known.object = object;
    if (!known || known.endpoint !== endpoint || again) {
      const previous = known;
      const heldBefore = previous !== undefined && this.#holderOf(previous.serviceName) === previous;
      clearTimeout(previous?.retry);
      const failures = previous && previous.endpoint === endpoint ? previous.failures : 0;
      known = { object, serviceName, endpoint, failures, away: previous?.away };
      this.#known.set(name, known);
      if (previous && heldBefore && previous.serviceName !== serviceName) await this.#handOver(previous);
      await this.#claim(known);
    }
    if (isObject(devSession) && known.served) {
      this.#options.routes.hold(
        holderOf(this.#options.namespace, name),
        { ...(devSession as Omit<DevSession, 'service'>), service: serviceName },
        object.metadata.annotations?.[DEV_SESSION_RENEWED],
      );
    } else {
      this.#options.routes.release(holderOf(this.#options.namespace, name));
    }
    await this.#writeStatus(known);
  }

  /**
   * Serves `known` when it is the oldest FunctionService naming its service, taking the service from
   * a newer one that had it; refused otherwise, saying which object has it.
   */
  async #claim(known: Known): Promise<void> {
    const { namespace, logger, services, routes } = this.#options;
    const { name } = known.object.metadata;
    if (this.#options.given.has(known.serviceName)) {
      known.refusal = `serviceName "${known.serviceName}" is that of a function service the gateway was given otherwise (--functions)`;
      logger.warning(`FunctionService ${namespace}/${name} is not served: ${known.refusal}`);
      return;
    }
    const holder = this.#holderOf(known.serviceName);
    if (holder && holder !== known) {
      known.refusal =
        `serviceName "${known.serviceName}" is already that of FunctionService ${namespace}/${holder.object.metadata.name}, ` +
        'which is older: one service has one FunctionService';
      logger.warning(`FunctionService ${namespace}/${name} is not served: ${known.refusal}`);
      return;
    }
    const displaced = [...this.#known.values()].find(
      (other) => other !== known && other.serviceName === known.serviceName && other.served,
    );
    if (displaced) {
      displaced.served = undefined;
      routes.release(holderOf(namespace, displaced.object.metadata.name));
      await services.remove(known.serviceName);
      await this.#claim(displaced); // refused now, saying why
      await this.#writeStatus(displaced);
    }
    await this.#serve(known);
  }

  /** `previous`, which had its service, no longer names it: the next FunctionService naming it, if any, has it. */
  async #handOver(previous: Known): Promise<void> {
    this.#options.routes.release(holderOf(this.#options.namespace, previous.object.metadata.name));
    await this.#options.services.remove(previous.serviceName);
    const next = this.#holderOf(previous.serviceName);
    if (next && !next.served) await this.#observe(next.object, true);
  }

  async #serve(known: Known): Promise<void> {
    const { name } = known.object.metadata;
    const { namespace, settings, logger } = this.#options;
    known.refusal =
      tlsSecretProblem(known.object, settings) ??
      (await functionServiceUrlProblem(String(known.object.spec?.url), settings.calls.allowLoopback));
    if (known.refusal) {
      logger.warning(`FunctionService ${namespace}/${name} is not served: ${known.refusal}`);
      // Nor is what was served of it before, at the url it had.
      this.#options.routes.release(holderOf(namespace, name));
      await this.#options.services.remove(known.serviceName);
      return;
    }
    try {
      const endpoint = await functionServiceEndpoint(this.#options.client, known.object);
      const service = await this.#options.services.put(
        settings.calls.allowLoopback ? endpoint : { ...endpoint, lookup: refusingLocal() },
      );
      known.served = {
        protocol: service.manifest.protocol,
        handlers: service.manifest.handlers.map((handler) => handler.id),
      };
      known.error = undefined;
      known.refused = undefined;
      known.failures = 0;
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      // The status in the gateway's words (what the service said is in its log only), bounded.
      known.error = statusError(error);
      known.refused = isRefusal(error);
      const delayS = backoffDelay({ delays: settings.calls.serviceRetryDelaysS }, known.failures++);
      logger.warning(
        `FunctionService ${namespace}/${name} is not served yet: ${message}; trying again in ${delayS}s`,
      );
      if (!this.#stopped) {
        known.retry = setTimeout(() => this.#serially(() => this.#retry(name)), delayS * 1000);
      }
    }
  }

  async #retry(name: string): Promise<void> {
    const object = await ignoreNotFound(
      this.#options.client.get<KubernetesObject>(`${this.#path}/${encodeURIComponent(name)}`),
    );
    if (object && this.#known.has(name)) await this.#observe(object, true);
  }

  async #forget(object: KubernetesObject): Promise<void> {
    const known = this.#known.get(object.metadata.name);
    if (!known) return;
    clearTimeout(known.retry);
    const heldBefore = this.#holderOf(known.serviceName) === known;
    this.#known.delete(object.metadata.name);
    if (known.served) {
      this.#options.logger.info(
        `function service "${known.serviceName}" is no longer served: its FunctionService is gone`,
      );
    }
    if (heldBefore) await this.#handOver(known);
  }

  /** Its status written anew, and an Event when a dev session took its calls away or gave them back. */
  async #stateChanged(known: Known): Promise<void> {
    const away = known.served ? this.#options.services.state(known.serviceName)?.away : undefined;
    if (away !== known.away) {
      const { serviceName } = known;
      const [reason, message] = away
        ? [
            'DevSessionStarted',
            `the calls of "${serviceName}" go to ${away}, a dev session's URL, while it is renewed`,
          ]
        : ['DevSessionEnded', `the calls of "${serviceName}" go to ${String(known.object.spec?.url)} again`];
      known.away = away;
      if (this.#role.leads)
        await postEvents(
          this.#options.client,
          known.object,
          [{ type: 'Normal', reason, message }],
          this.#options.logger,
        );
    }
    await this.#writeStatus(known);
  }

  /** Writes the status when it says something new: the gateway's writes stay few. */
  async #writeStatus(known: Known): Promise<void> {
    if (this.#known.get(known.object.metadata.name) !== known) return; // replaced or forgotten meanwhile
    const state = known.served ? this.#options.services.state(known.serviceName) : undefined;
    const next = statusOf(known, state);
    const current = isObject(known.object.status) ? known.object.status : {};
    const unchanged = Object.entries(next).every(
      ([key, value]) => JSON.stringify(current[key] ?? null) === JSON.stringify(value ?? null),
    );
    if (unchanged) return;
    const { name } = known.object.metadata;
    try {
      known.object = await this.#options.client.patch<KubernetesObject>(
        `${this.#path}/${encodeURIComponent(name)}/status`,
        'merge',
        { status: next },
      );
    } catch (error) {
      this.#options.logger.warning(
        `the status of FunctionService ${this.#options.namespace}/${name} could not be written`,
        { err: error },
      );
    }
  }
}

/**
 * Why a FunctionService's `spec.tls.secretName` is refused, or undefined: it names a Secret the gateway
 * keeps its own keys in, which the service's certificate would overwrite (its function CA's, say: the
 * next start would fail, and every service's certificate with it).
 */
export function tlsSecretProblem(
  object: KubernetesObject,
  settings: Pick<Settings, 'signing' | 'calls' | 'admission'>,
): string | undefined {
  const tls = isObject(object.spec) && isObject(object.spec.tls) ? object.spec.tls : undefined;
  const { namespace } = object.metadata;
  const own = ownSecrets(settings).find(
    (secret) => secret.namespace === namespace && secret.name === tls?.secretName,
  );
  return (
    own &&
    `spec.tls.secretName names ${own.namespace}/${own.name}, a Secret the gateway keeps its own keys in, ` +
      "which the service's certificate would overwrite"
  );
}

/** Characters of a status.lastError at most: the rest is in the gateway's log. */
const STATUS_ERROR_CHARS = 1024;

/**
 * Why a service is not served, as its status says it: in the gateway's words, never what the service
 * answered (that is in the gateway's log only). A message that may quote a value the service sent (a
 * manifest's field, a scope's id) has its control characters escaped and is cut to STATUS_ERROR_CHARS.
 */
export function statusError(error: unknown): string {
  if (error instanceof ServiceError) return error.reason;
  const message = escapeControls(error instanceof Error ? error.message : String(error));
  if (message.length <= STATUS_ERROR_CHARS) return message;
  return `${message.slice(0, STATUS_ERROR_CHARS)}… (cut: the whole reason is in the gateway's log)`;
}

/** Who holds a dev session in the object's field, for the routes. */
function holderOf(namespace: string, name: string): string {
  return `FunctionService ${namespace}/${name}`;
}

/**
 * What a FunctionService's status says: served or not and why (Refused: for its spec, its manifest, or
 * its webhooks, which the apiserver refused), whether its calls are made now, and where.
 */
export function statusOf(known: Known, state: ServiceState | undefined): Record<string, unknown> {
  const refused =
    known.refusal ?? (known.refused ? known.error : undefined) ?? (known.served ? state?.refused : undefined);
  const down = refused ?? known.error ?? (known.served ? state?.down : undefined);
  const devSession = isObject(known.object.spec) ? known.object.spec.devSession : undefined;
  const holder = isObject(devSession) && devSession.url === state?.away ? devSession.holder : undefined;
  const found = known.served && !known.error && !known.refusal;
  return {
    phase: refused ? 'Refused' : known.served && !down ? 'Ready' : 'Unreachable',
    protocol: found ? known.served?.protocol : null,
    handlers: found ? known.served?.handlers : null,
    lastError: down ?? null,
    observedGeneration: known.object.metadata.generation,
    devSession: state?.away ? { url: state.away, ...(holder ? { holder } : {}) } : null,
  };
}
