/**
 * Dev sessions, as an engine of the gateway: `causeway dev` on a laptop holds a session naming a
 * function service and the laptop's URL. While the session is renewed, the gateway sends that
 * service's calls (and admission reviews) to the laptop; when it ends, or is not renewed within its
 * duration, they go back to the deployed service. A session is held by the service's FunctionService
 * object, in its `devSession` field (services/function-service-objects.ts), or, for a service given
 * otherwise, by a Lease in a namespace the gateway was told to look in (`--dev-sessions`). Either is
 * the whole protocol, so a session heals by itself, shows in `kubectl get`, and needs no restart.
 *
 * Whoever may write such a Lease or field is not trusted with the service's calls: a session is
 * followed only for a service that allows dev sessions (its FunctionService's `spec.devSessions`, or
 * `--function-dev-sessions`), to a URL its globs allow, for at most its `maxSeconds` unrenewed.
 */
import type { KubernetesObject } from '../../protocol/index.ts';
import { isObject } from '../../protocol/json.ts';
import type { Identity } from '../identity.ts';
import type { KubeClient } from '../kube/client.ts';
import { Watcher } from '../kube/watcher.ts';
import type { Logger } from '../logging.ts';
import type { Part } from '../manager/manager.ts';
import { Serial } from '../serial.ts';
import type { Settings } from '../settings.ts';
import { MAX_TIMER_MS } from '../timing.ts';
import { matchesUrlGlob, shownUrl, urlProblem } from './function-service-urls.ts';

/** What one dev session asks: calls of `service` go to `url` while it lasts. */
export interface DevSession {
  service: string;
  url: string;
  /** Changes when the laptop's code does: the gateway reads its manifest again. */
  revision: string;
  /** Who holds it, for people reading the Lease: `user@host`. */
  holder: string;
  durationSeconds: number;
}

/** The Lease a session holds: the label lets the gateway watch these and no other Lease. */
export function devSessionLease(
  session: DevSession,
  annotationPrefix: string,
  now: Date,
): Record<string, unknown> {
  return {
    apiVersion: 'coordination.k8s.io/v1',
    kind: 'Lease',
    metadata: {
      name: devSessionLeaseName(session.service),
      labels: { [`${annotationPrefix}/dev-session`]: 'true' },
      annotations: {
        [`${annotationPrefix}/service`]: session.service,
        [`${annotationPrefix}/url`]: session.url,
        [`${annotationPrefix}/revision`]: session.revision,
      },
    },
    spec: {
      holderIdentity: session.holder,
      leaseDurationSeconds: session.durationSeconds,
      renewTime: now.toISOString().replace('Z', '000Z'), // a MicroTime
    },
  };
}

/** One session per service: a second laptop takes it over, as the last writer. */
export function devSessionLeaseName(service: string): string {
  const name = service
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, '-')
    .replace(/^-+|-+$/g, '');
  return `causeway-dev-${name}`.slice(0, 63).replace(/-+$/, '');
}

/** The session a Lease holds, or what is wrong with it. */
export function devSessionOf(lease: KubernetesObject, annotationPrefix: string): DevSession | string {
  const annotations = lease.metadata.annotations ?? {};
  const service = annotations[`${annotationPrefix}/service`];
  const url = annotations[`${annotationPrefix}/url`];
  const spec = isObject(lease.spec) ? lease.spec : {};
  const durationSeconds = spec.leaseDurationSeconds;
  if (!service) return `no annotation ${annotationPrefix}/service`;
  if (!url || !/^https?:\/\//.test(url)) return `annotation ${annotationPrefix}/url is not an http(s) URL`;
  if (typeof durationSeconds !== 'number' || !(durationSeconds > 0)) return 'no spec.leaseDurationSeconds';
  return {
    service,
    url,
    revision: annotations[`${annotationPrefix}/revision`] ?? '',
    holder: typeof spec.holderIdentity === 'string' ? spec.holderIdentity : '',
    durationSeconds,
  };
}

/** Sends a service's calls to a session's URL, or home for undefined; false if it did not answer as that service. */
export type Redirect = (
  service: string,
  to: { url: string; revision: string } | undefined,
) => Promise<boolean>;

/** What a service allows of dev sessions: URLs matching one of `urls` (globs), each lasting `maxSeconds` at most unrenewed. */
export interface DevSessionsAllowed {
  urls: readonly string[];
  maxSeconds: number;
}

/** How long a session may last unrenewed when its service does not say: an hour. */
export const DEFAULT_DEV_SESSION_SECONDS = 3600;

/** Why `session` is not followed under `allowed` (its service's word), or undefined. */
export function devSessionRefusal(
  session: DevSession,
  allowed: DevSessionsAllowed | undefined,
): string | undefined {
  if (!allowed) {
    return `"${session.service}" does not allow dev sessions (spec.devSessions on its FunctionService, or --function-dev-sessions)`;
  }
  const problem = urlProblem(session.url);
  if (problem) return `its URL ${shownUrl(session.url)} is refused: ${problem}`;
  if (!allowed.urls.some((glob) => matchesUrlGlob(session.url, glob))) {
    return `its URL ${session.url} matches none that "${session.service}" allows (${allowed.urls.join(', ') || 'none'})`;
  }
  return undefined;
}

/**
 * What each service allows of dev sessions, now: its FunctionService's `spec.devSessions` (read from
 * the objects once they are followed), or, for a service given otherwise, what it was given with
 * (`FunctionEndpoint.devSessions`, --function-dev-sessions).
 */
export class DevSessionAllowances {
  readonly #given: ReadonlyMap<string, DevSessionsAllowed | undefined>;
  #objects: { devSessionsAllowed(service: string): DevSessionsAllowed | undefined } | undefined;

  constructor(
    given: Iterable<{ name: string; devSessions?: { urls: readonly string[]; maxSeconds?: number } }>,
  ) {
    const allowed = new Map<string, DevSessionsAllowed | undefined>();
    for (const { name, devSessions } of given) {
      if (allowed.has(name)) continue; // the first given by a name is the one served
      const maxSeconds = devSessions?.maxSeconds ?? DEFAULT_DEV_SESSION_SECONDS;
      allowed.set(name, devSessions && { urls: devSessions.urls, maxSeconds });
    }
    this.#given = allowed;
  }

  /** FunctionService objects are followed now: what their specs allow comes first. */
  readFrom(objects: { devSessionsAllowed(service: string): DevSessionsAllowed | undefined }): void {
    this.#objects = objects;
  }

  for(service: string): DevSessionsAllowed | undefined {
    return this.#objects?.devSessionsAllowed(service) ?? this.#given.get(service);
  }
}

export interface DevSessionRoutesOptions {
  redirect: Redirect;
  /** What each service allows of dev sessions, now: see DevSessionAllowances. */
  allowances: Pick<DevSessionAllowances, 'for'>;
  logger: Logger;
}

interface Held {
  session: DevSession;
  renewal: unknown;
  /** By this process's clock, from when it saw the renewal: the laptop's clock may be off. */
  renewedAt: number;
}

/**
 * Where each service's calls go, from the dev sessions held now, whoever holds them (a Lease, a
 * FunctionService's field): to the URL of the live session that lasts longest, or home when none
 * is live. A session not renewed within its duration (capped by what its service allows) expires
 * here, by this process's clock; one its service does not allow is ignored, and said so once.
 */
export class DevSessionRoutes implements Part {
  readonly name = 'dev session routes';
  readonly placement = 'every replica'; // every replica calls the services
  readonly #options: DevSessionRoutesOptions;
  /** By holder: `Lease <namespace>/<name>`, `FunctionService <namespace>/<name>`. */
  readonly #held = new Map<string, Held>();
  /** Where each service's calls go now: `url revision`. */
  readonly #routed = new Map<string, string>();
  /** By holder, the refusal last logged: a renewal of a refused session is not logged again. */
  readonly #refused = new Map<string, string>();
  #expiry: NodeJS.Timeout | undefined;
  /** Redirects one at a time, in the order decided. */
  readonly #routing = new Serial();

  constructor(options: DevSessionRoutesOptions) {
    this.#options = options;
  }

  start(): void {}

  async stop(): Promise<void> {
    clearTimeout(this.#expiry);
    await this.#routing.idle();
  }

  /** `holder` holds `session`; a new `renewal` (what the holder wrote when it renewed) starts its duration again. */
  hold(holder: string, session: DevSession, renewal: unknown): void {
    const known = this.#held.get(holder);
    const renewed = !known || known.renewal !== renewal;
    const renewedAt = renewed ? Date.now() : (known?.renewedAt ?? 0);
    this.#held.set(holder, { session, renewal, renewedAt });
    this.#route();
  }

  /** `holder` holds no session; every other is looked at again, as what its service allows may have changed. */
  release(holder: string): void {
    this.#refused.delete(holder);
    this.#held.delete(holder);
    this.#route();
  }

  /** Sends each service's calls where its live session says, or home; looks again at the next expiry. */
  #route(): void {
    clearTimeout(this.#expiry);
    const now = Date.now();
    const live = new Map<string, Held & { expiresAt: number }>();
    for (const [holder, held] of this.#held) {
      const allowed = this.#allowedFor(holder, held.session);
      if (!allowed) continue;
      const seconds = Math.min(held.session.durationSeconds, allowed.maxSeconds);
      const expiresAt = held.renewedAt + seconds * 1000;
      if (expiresAt <= now) continue;
      const other = live.get(held.session.service);
      if (!other || expiresAt > other.expiresAt) live.set(held.session.service, { ...held, expiresAt });
    }
    const services = new Set([...this.#routed.keys(), ...live.keys()]);
    for (const service of services) {
      const session = live.get(service)?.session;
      const target = session ? `${session.url} ${session.revision}` : undefined;
      if (target === this.#routed.get(service)) continue;
      if (target) this.#routed.set(service, target);
      else this.#routed.delete(service);
      const to = session ? { url: session.url, revision: session.revision } : undefined;
      void this.#routing.run(async () => {
        const redirected = await this.#options.redirect(service, to).catch((error) => {
          this.#options.logger.error(`redirecting the calls of "${service}" failed`, { err: error });
          return false;
        });
        // Not there (yet), or failed: forgotten, so the session's next renewal tries again.
        if (!redirected && this.#routed.get(service) === target) this.#routed.delete(service);
      });
    }
    const next = Math.min(...[...live.values()].map((held) => held.expiresAt));
    if (Number.isFinite(next)) {
      this.#expiry = setTimeout(() => this.#route(), Math.min(next - now + 10, MAX_TIMER_MS));
    }
  }

  /** What its service allows, when the session is followed; a refusal is logged once, not at each renewal. */
  #allowedFor(holder: string, session: DevSession): DevSessionsAllowed | undefined {
    const allowed = this.#options.allowances.for(session.service);
    const refusal = devSessionRefusal(session, allowed);
    if (!refusal) {
      this.#refused.delete(holder);
      return allowed;
    }
    if (this.#refused.get(holder) !== refusal) {
      this.#refused.set(holder, refusal);
      this.#options.logger.warning(
        `the dev session of ${holder} for "${session.service}" is ignored: ${refusal}`,
      );
    }
    return undefined;
  }
}

export interface DevSessionsOptions {
  client: KubeClient;
  namespace: string;
  identity: Identity;
  settings: Settings['watching'];
  logger: Logger;
  routes: DevSessionRoutes;
}

/** The dev sessions that Leases in one namespace hold. */
export class DevSessions implements Part {
  readonly name = 'dev sessions';
  readonly placement = 'every replica'; // every replica calls the services
  readonly #options: DevSessionsOptions;
  readonly #watcher: Watcher;

  constructor(options: DevSessionsOptions) {
    this.#options = options;
    this.#watcher = new Watcher({
      client: options.client,
      path: `/apis/coordination.k8s.io/v1/namespaces/${options.namespace}/leases`,
      labelSelector: `${options.identity.annotationPrefix}/dev-session`,
      logger: options.logger.child({ watching: 'dev sessions', namespace: options.namespace }),
      settings: options.settings,
      onEvent: ({ type, object }) =>
        this.#observe(type === 'DELETED' ? undefined : object, object.metadata.name),
    });
  }

  start(): void {
    this.#watcher.start();
  }

  async stop(): Promise<void> {
    await this.#watcher.stop();
  }

  #observe(lease: KubernetesObject | undefined, name: string): void {
    const { routes, identity, logger, namespace } = this.#options;
    const session = lease && devSessionOf(lease, identity.annotationPrefix);
    if (typeof session === 'string') {
      logger.warning(`Lease ${namespace}/${name} is no dev session: ${session}`);
    }
    const holder = `Lease ${namespace}/${name}`;
    if (!session || typeof session === 'string') routes.release(holder);
    else routes.hold(holder, session, isObject(lease?.spec) ? lease.spec.renewTime : undefined);
  }
}
