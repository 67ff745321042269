/**
 * The function services a gateway serves, each at its home endpoint (a `--functions` URL, or a fetch
 * handler in this process) or, while a dev session redirects it, at a laptop's URL. The gateway is
 * told whenever the service that answers for a name changes: another manifest after a redeploy (found
 * by reading the manifests again), or another endpoint.
 */
import type { LookupFunction } from 'node:net';
import { isLoopback, type ServiceScope } from '../../protocol/index.ts';
import type { Logger } from '../logging.ts';
import { Serial } from '../serial.ts';
import type { Settings } from '../settings.ts';
import { type Backoff, backoffDelay, sleep } from '../timing.ts';
import { CircuitBreaker } from './breaker.ts';
import type { Budgets, ServiceBudgets } from './budget.ts';
import { type CallObserver, FunctionService, type IndexSource, readHealth } from './function-service.ts';
import { isRefusal, type Refusals } from './refusals.ts';
import { ScopeError, type ScopeGuard } from './scope.ts';
import { hmacSigner, type Signer } from './signer.ts';
import { type FetchHandler, httpTransport, inProcessTransport, type Transport } from './transport.ts';

/** A function service over HTTP, by its name (pinned: the audience it is called with) and its base URL. */
export interface FunctionEndpoint {
  name: string;
  url: string;
  /** A secret shared with this service alone (HS256, ≥ 32 bytes), instead of the gateway's signing keys. */
  secret?: Uint8Array;
  /** PEM of the CA to trust for this service (`settings.calls.ca` otherwise). */
  ca?: string;
  /**
   * What it may reach (dispatch/scope.ts), pinned by whoever deploys the gateway; required unless
   * the gateway serves unscoped services (`settings.calls.unscoped`, --unscoped). `declared`: the
   * manifest's own, for a service on this machine, one trust domain with the gateway (`causeway dev`).
   */
  scope?: ServiceScope | 'declared';
  /**
   * The Secret to issue this service's serving certificate into (its pod mounts it): the service is
   * then trusted with a certificate from the gateway's CA of function services only.
   */
  certificate?: { namespace: string; name: string };
  /** How long one of its calls may take (`settings.calls.timeoutMs` otherwise). */
  timeoutMs?: number;
  /** Calls to it at once (`settings.calls.concurrencyPerService` otherwise). */
  concurrency?: number;
  /** The namespace of its FunctionService object, where its ServiceAccount is under --impersonate. */
  namespace?: string;
  /**
   * How its host's name is resolved at each connection, a dev session's URL's too: a FunctionService's
   * refuses local addresses there, not only when its URL is read (a name may resolve elsewhere later).
   */
  lookup?: LookupFunction;
  /**
   * Let dev sessions (services/dev-sessions.ts) send its calls to URLs matching one of `urls` (globs),
   * each lasting `maxSeconds` (default 3600) at most unrenewed; without it, its sessions are ignored.
   */
  devSessions?: { urls: readonly string[]; maxSeconds?: number };
}

export interface FunctionServicesOptions {
  /** Signs the calls of services without a secret of their own; undefined when there is no such signer. */
  signer: Signer | undefined;
  settings: Settings['calls'];
  /** Where the indexes its handlers read come from. */
  indexes?: IndexSource;
  /** Issues the certificates of the services given a certificate Secret, and pins their CA. */
  certificates?: CertificateIssuer;
  logger: Logger;
  /** Holds the services to their scopes: their manifests as they connect, and their answers. */
  scope?: ScopeGuard;
  /**
   * Set (--impersonate): each service's children and events are written as its ServiceAccount, in this
   * namespace (the gateway's) unless its FunctionService's or its scope's says otherwise.
   */
  impersonate?: string;
  /** Told of the services' requests and calls (the metrics'). */
  observer?: CallObserver;
  /** Where the services refused for their manifest are said to be, and no longer once taken up. */
  refusals?: Refusals;
  /** Each service's budgets, which the calls of a service over HTTP are held to (dispatch/budget.ts). */
  budgets?: Budgets;
}

/** What services/function-certificates.ts does for the services given a certificate Secret. */
export interface CertificateIssuer {
  /** The endpoint trusting only the gateway's CA, once its certificate is issued (or kept). */
  pin(endpoint: FunctionEndpoint): Promise<FunctionEndpoint>;
  /** Stops renewing the certificate of a service no longer served. */
  release(name: string): void;
}

/**
 * The service that answers for a name is now `next`: its handlers are to be rebound (the calls under
 * way finish). `previous` is undefined for a service added, `next` for one removed.
 */
export type ServiceChange = (
  previous: FunctionService | undefined,
  next: FunctionService | undefined,
) => Promise<void>;

/** How a service is now, for whoever shows it (a FunctionService's status). */
export interface ServiceState {
  /** While its circuit is open, why. */
  down: string | undefined;
  /** Where its calls go instead of home, while a dev session lasts. */
  away: string | undefined;
  /** Why it is refused in part (its webhooks, a manifest it was redeployed with), while it is. */
  refused: string | undefined;
}

/**
 * The way to a service over HTTP: its connection pool, the breaker that stops calls while it is down,
 * and the service's budgets, the same whichever way its calls go.
 */
interface Way {
  transport: Transport;
  breaker: CircuitBreaker;
  budgets?: ServiceBudgets;
}

interface Slot {
  /** How it was given, for a service over HTTP. */
  endpoint?: FunctionEndpoint;
  sign: Signer;
  home: FunctionService;
  current: FunctionService;
  /** Where the calls go instead of home, while a dev session lasts. */
  away?: { url: string; revision: string } & Way;
}

/** Closes a way once its calls under way are done. */
function closeWay(way: Way): Promise<void> {
  way.breaker.close();
  return way.transport.close();
}

/** Between tries to reach a service not reachable yet: from 250 ms to 10 s, jittered. */
const CONNECT_BACKOFF: Backoff = { first: 250, max: 10_000, jitter: true };

/** For a service in this process, with no signer to send its calls elsewhere. */
const UNSIGNED: Signer = () => {
  throw new Error('the gateway has no key or secret to sign calls to another instance of this service with');
};

export class FunctionServices {
  readonly #options: FunctionServicesOptions;
  readonly #slots: Slot[] = [];
  readonly #listeners = new Set<(name: string) => void>();
  /** Told of each change of the service that answers for a name; none before it is set (see onChange). */
  #onChange: ServiceChange | undefined;
  /** Changes one at a time, in the order asked: a redirect, its end and a re-read never interleave. */
  readonly #changes = new Serial();
  /** By name: the re-read of a service's manifest its answer asked for, not yet done; asks meanwhile are one. */
  readonly #rereads = new Map<string, Promise<void>>();
  /** By name: when a service's manifest was last re-read as its answer asked. */
  readonly #lastReread = new Map<string, number>();
  /** Aborted at the close: a re-read waiting its turn is not made. */
  readonly #closing = new AbortController();
  /**
   * By name: the services given at the start whose manifest was refused, not served: the gateway
   * starts without them, and reads their manifests again once it runs, until each is taken up.
   */
  readonly #refused = new Map<string, { endpoint: FunctionEndpoint; sign: Signer }>();
  /** The loops reading a refused service's manifest again. */
  readonly #takingUp = new Set<Promise<void>>();

  constructor(options: FunctionServicesOptions) {
    this.#options = options;
    // Why a service is refused shows where its state does (a FunctionService's status).
    options.refusals?.onChange((name) => this.#tell(name));
  }

  /** Connects to every endpoint, waiting for those not reachable yet (until `signal` aborts). */
  async connect(
    endpoints: ReadonlyArray<FunctionEndpoint | FetchHandler>,
    signal: AbortSignal,
  ): Promise<void> {
    // A service in this process is asked directly; an instance of it elsewhere (a dev session's) is signed for.
    const signers = endpoints.map((endpoint) =>
      'url' in endpoint ? this.#signerFor(endpoint) : (this.#options.signer ?? UNSIGNED),
    );
    const { timeoutMs } = this.#options.settings;
    const slots = await Promise.all(
      endpoints.map(async (endpoint, index): Promise<Slot | undefined> => {
        const sign = signers[index] as Signer;
        if ('url' in endpoint) {
          try {
            const service = await this.#connectWithRetry(
              endpoint.url,
              async () => (await this.#connectOnce(await this.#pinned(endpoint), sign)).service,
              signal,
            );
            return { endpoint, sign, home: service, current: service };
          } catch (error) {
            // One service's manifest refused is that service's alone: the gateway starts with the others.
            if (signal.aborted || !this.#refuse(endpoint.name, error)) throw error;
            this.#refused.set(endpoint.name, { endpoint, sign });
            return undefined;
          }
        }
        // An operator in this process is the gateway's own code: a refusal of it fails the start.
        const service = await this.#connectWithRetry(
          'this process',
          async () =>
            this.#vetted(
              await FunctionService.connect({
                transport: inProcessTransport(endpoint, this.#options.settings.maxReplyBytes),
                name: undefined,
                scope: 'declared',
                sign,
                timeoutMs,
                indexes: this.#options.indexes,
                guard: this.#options.scope,
                ...(this.#options.impersonate === undefined
                  ? {}
                  : { impersonate: this.#options.impersonate }),
                ...(this.#options.observer ? { observer: this.#options.observer } : {}),
              }),
            ),
          signal,
        );
        return { sign, home: service, current: service };
      }),
    );
    this.#slots.push(...slots.filter((slot) => slot !== undefined));
  }

  /**
   * The gateway runs: the services refused at the start have their manifests read again, spaced as
   * re-reads are (`manifestRereadSpacingMs`, doubled after each refusal up to `manifestRefreshMs`),
   * each taken up (bound, its startup handlers called) once its manifest is accepted.
   */
  start(): void {
    for (const name of this.#refused.keys()) this.#takeUpLater(name);
  }

  #takeUpLater(name: string): void {
    const { manifestRereadSpacingMs, manifestRefreshMs } = this.#options.settings;
    const backoff: Backoff = {
      first: manifestRereadSpacingMs,
      max: Math.max(manifestRereadSpacingMs, manifestRefreshMs),
      jitter: true,
    };
    const closing = this.#closing.signal;
    const loop = (async () => {
      for (let tries = 0; this.#refused.has(name) && !closing.aborted; tries++) {
        await sleep(backoffDelay(backoff, tries), closing);
        if (!closing.aborted) await this.#changes.run(() => this.#takeUp(name));
      }
    })();
    this.#takingUp.add(loop);
    void loop.finally(() => this.#takingUp.delete(loop));
  }

  /** Reads a refused service's manifest again, and serves it from now on if it is accepted. */
  async #takeUp(name: string): Promise<void> {
    const refused = this.#refused.get(name);
    if (!refused) return;
    const { endpoint, sign } = refused;
    let service: FunctionService;
    try {
      service = (await this.#connectOnce(await this.#pinned(endpoint), sign)).service;
    } catch (error) {
      if (!this.#refuse(name, error)) {
        this.#options.logger.debug(`re-reading refused "${name}" failed: ${describe(error)}`);
      }
      return;
    }
    this.#refused.delete(name);
    this.#slots.push({ endpoint, sign, home: service, current: service });
    this.#options.refusals?.clear(name, 'manifest');
    const ids = service.manifest.handlers.map((handler) => handler.id).join(', ');
    this.#options.logger.info(
      `function service "${name}" at ${service.url} is served now, its manifest accepted: handlers ${ids || '(none)'}`,
    );
    try {
      await this.#onChange?.(undefined, service);
    } catch (error) {
      this.#options.logger.error(`serving the handlers of "${name}" failed`, { err: describe(error) });
    }
    this.#tell(name);
  }

  /**
   * Says that `name` is refused, when `error` is a refusal (see isRefusal): logged when it is news,
   * and shown where refusals are. False for any other error.
   */
  #refuse(name: string, error: unknown): boolean {
    if (!isRefusal(error)) return false;
    const why = describe(error);
    if (this.#options.refusals?.refuse(name, 'manifest', why) ?? true) {
      this.#options.logger.error(`function service "${name}" is refused: ${why}`);
    }
    return true;
  }

  /** How calls to `endpoint` are signed, checked before any is made: its own secret, or the gateway's keys. */
  #signerFor(endpoint: FunctionEndpoint): Signer {
    this.#checkPinned(endpoint);
    this.#checkScheme(endpoint.name, endpoint.url);
    if (endpoint.secret) return hmacSigner(endpoint.secret);
    if (this.#options.signer) return this.#options.signer;
    throw new Error(
      `no way to sign the calls to "${endpoint.name}": give the gateway signing keys (--signing-keys, ` +
        'settings.signing.keys) or a secret shared with the service (--secret-file)',
    );
  }

  /** The services that answer now, one per name. */
  get current(): FunctionService[] {
    return this.#slots.map((slot) => slot.current);
  }

  /** How the service named `name` is now; undefined while it is not served. */
  state(name: string): ServiceState | undefined {
    const slot = this.#slots.find((candidate) => candidate.home.name === name);
    return (
      slot && { down: slot.current.down, away: slot.away?.url, refused: this.#options.refusals?.why(name) }
    );
  }

  /**
   * Tells `change` of every change of the service that answers for a name from now on. Whoever sets it
   * serves `current` as it is then; a change before (none comes before the gateway runs) is in it.
   */
  onChange(change: ServiceChange): void {
    this.#onChange = change;
  }

  /** Calls `listener` with a service's name when its state may have changed; returns how to stop. */
  onStateChange(listener: (name: string) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /**
   * Sends the calls of the service named `name` to `url` (another instance of it, a laptop's), or
   * home again when `url` is undefined. A new `revision` at the same URL reads its manifest again.
   * Resolves false when `url` does not answer as that service: the calls stay where they were.
   */
  redirect(name: string, to: { url: string; revision: string } | undefined): Promise<boolean> {
    return this.#changes.run(async () => {
      const slot = this.#slots.find((candidate) => candidate.home.name === name);
      const { logger } = this.#options;
      if (!slot) {
        logger.warning(
          `a dev session names the function service "${name}", which this gateway does not serve`,
        );
        return false;
      }
      if (!to) {
        if (!slot.away) return true;
        const away = slot.away;
        slot.away = undefined;
        logger.info(`calls of "${name}" go to ${slot.home.url} again`);
        // Home as it is now: it may have been redeployed meanwhile.
        slot.home = await slot.home.reread().catch(() => slot.home);
        await this.#change(slot, slot.home);
        await closeWay(away);
        this.#tell(name);
        return true;
      }
      if (slot.away?.url === to.url && slot.away.revision === to.revision) return true;
      try {
        this.#checkScheme(name, to.url);
      } catch (error) {
        logger.warning('a dev session is not redirected', { service: name, err: describe(error) });
        return false;
      }
      let connected: { service: FunctionService; way: Way };
      try {
        connected = await this.#connectOnce({ ...slot.endpoint, name, url: to.url }, slot.sign);
      } catch (error) {
        logger.warning('a dev session is not redirected', { service: name, err: describe(error) });
        return false;
      }
      const previous = slot.away;
      slot.away = { ...to, ...connected.way };
      if (previous?.url !== to.url) logger.info(`calls of "${name}" go to ${to.url} (a dev session)`);
      await this.#change(slot, connected.service);
      if (previous) await closeWay(previous);
      this.#tell(name);
      return true;
    });
  }

  /**
   * Serves `endpoint` from now on: a service added, or the one of that name given anew (another URL,
   * secret, CA, timeout). Connects once, and throws why when it cannot: the caller says so and tries
   * again. The calls under way with a replaced service finish with it.
   */
  put(endpoint: FunctionEndpoint): Promise<FunctionService> {
    return this.#changes.run(async () => {
      const sign = this.#signerFor(endpoint);
      let service: FunctionService;
      try {
        service = (await this.#connectOnce(await this.#pinned(endpoint), sign)).service;
      } catch (error) {
        this.#refuse(endpoint.name, error);
        throw error;
      }
      this.#options.refusals?.clear(endpoint.name, 'manifest');
      const slot = this.#slots.find((candidate) => candidate.home.name === endpoint.name);
      if (!slot) {
        this.#slots.push({ endpoint, sign, home: service, current: service });
        await this.#onChange?.(undefined, service);
        return service;
      }
      const replaced = slot.home;
      Object.assign(slot, { endpoint, sign, home: service });
      if (!slot.away) await this.#change(slot, service);
      await replaced.close();
      return service;
    });
  }

  /** Stops serving the service named `name`: its handlers are unbound, and its calls under way finish. */
  remove(name: string): Promise<void> {
    return this.#changes.run(async () => {
      this.#options.refusals?.forget(name);
      const index = this.#slots.findIndex((slot) => slot.home.name === name);
      const slot = this.#slots[index];
      if (!slot) return;
      this.#slots.splice(index, 1);
      this.#options.certificates?.release(name);
      await this.#onChange?.(slot.current, undefined);
      await slot.home.close();
      if (slot.away) await closeWay(slot.away);
    });
  }

  /** Reads every service's manifest again; a service redeployed with other handlers is rebound. */
  refresh(): Promise<void> {
    return this.#reread(() => this.#slots);
  }

  /** Reads the manifests of the slots `which` gives again, once the changes before are done. */
  #reread(which: () => readonly Slot[]): Promise<void> {
    return this.#changes.run(async () => {
      for (const slot of which()) {
        try {
          const next = await slot.current.reread();
          if (next !== slot.current) await this.#vetted(next);
          // Accepted (vetted too): no longer refused, if it was.
          this.#options.refusals?.clear(next.name, 'manifest');
          if (next !== slot.current) {
            this.#options.logger.info(`function service "${next.name}" at ${next.url} changed its handlers`);
            if (!slot.away) slot.home = next;
            await this.#change(slot, next);
          }
        } catch (error) {
          // Unreachable for now: its calls fail and are retried; the next refresh looks again.
          // Refused (malformed, beyond its scope): it keeps its handlers as they were, and is said
          // to be refused until a refresh reads a manifest it can be served with.
          if (!this.#refuse(slot.current.name, error)) {
            this.#options.logger.debug(`re-reading "${slot.current.name}" failed: ${describe(error)}`);
          }
        }
      }
    });
  }

  /**
   * A service answered that it lacks handlers a call named: redeployed without them. Its manifest (its
   * alone) is read now, not at the next refresh, so that they are no longer called (nor their webhooks
   * served); asked again, once `manifestRereadSpacingMs` has passed since, the asks meanwhile as one.
   */
  #rereadSoon(name: string): void {
    if (this.#rereads.has(name)) return;
    const { manifestRereadSpacingMs } = this.#options.settings;
    const waitMs = Math.max(
      0,
      (this.#lastReread.get(name) ?? -Infinity) + manifestRereadSpacingMs - Date.now(),
    );
    this.#options.logger.info(
      `function service "${name}" lacks handlers it was called for: reading its manifest again`,
    );
    const reread = (async () => {
      await sleep(waitMs, this.#closing.signal);
      if (this.#closing.signal.aborted) return;
      this.#lastReread.set(name, Date.now());
      await this.#reread(() => this.#slots.filter((slot) => slot.home.name === name));
    })().finally(() => this.#rereads.delete(name));
    this.#rereads.set(name, reread);
  }

  async close(): Promise<void> {
    this.#closing.abort();
    await Promise.all([...this.#rereads.values(), ...this.#takingUp]);
    await this.#changes.idle();
    await Promise.all(
      this.#slots.flatMap((slot) => [slot.home.close(), ...(slot.away ? [closeWay(slot.away)] : [])]),
    );
  }

  /** Connects to `endpoint` once, through a way of its own; nothing is left open when it fails. */
  async #connectOnce(
    endpoint: FunctionEndpoint,
    sign: Signer,
  ): Promise<{ service: FunctionService; way: Way }> {
    const way = this.#way(endpoint);
    try {
      const timeoutMs = endpoint.timeoutMs ?? this.#options.settings.timeoutMs;
      return {
        service: await this.#vetted(
          await FunctionService.connect({
            ...way,
            name: endpoint.name,
            ...(endpoint.scope ? { scope: endpoint.scope } : {}),
            sign,
            timeoutMs,
            indexes: this.#options.indexes,
            guard: this.#options.scope,
            ...(this.#options.impersonate === undefined
              ? {}
              : { impersonate: endpoint.namespace ?? this.#options.impersonate }),
            ...(this.#options.observer ? { observer: this.#options.observer } : {}),
            redeployed: () => this.#rereadSoon(endpoint.name),
            batches: {
              calls: this.#options.settings.callBatchSize,
              bytes: this.#options.settings.callBatchBytes,
            },
          }),
        ),
        way,
      };
    } catch (error) {
      await closeWay(way);
      throw error;
    }
  }

  #way(endpoint: FunctionEndpoint): Way {
    const { url, name } = endpoint;
    const { ca, concurrencyPerService, breakerThreshold, serviceRetryDelaysS, maxReplyBytes } =
      this.#options.settings;
    const concurrency = endpoint.concurrency ?? concurrencyPerService;
    const budgets = this.#options.budgets?.of(name, concurrency);
    const transport = httpTransport(url, endpoint.ca ?? ca, concurrency, maxReplyBytes, {
      ...(budgets ? { budgets } : {}),
      ...(endpoint.lookup ? { lookup: endpoint.lookup } : {}),
    });
    const breaker = new CircuitBreaker({
      threshold: breakerThreshold,
      probeDelaysS: serviceRetryDelaysS,
      probe: async () => void (await readHealth(transport)),
      logger: this.#options.logger.child({ service: name, url }),
      onChange: () => this.#tell(name),
    });
    return { transport, breaker, ...(budgets ? { budgets } : {}) };
  }

  /** Its certificate issued and its CA pinned, for a service given a certificate Secret. */
  async #pinned(endpoint: FunctionEndpoint): Promise<FunctionEndpoint> {
    if (!endpoint.certificate) return endpoint;
    const { certificates } = this.#options;
    if (!certificates) {
      throw new Error(
        `"${endpoint.name}" is to be given a certificate, but the gateway has no CA to issue it with ` +
          '(--function-certificates, settings.calls.certificateAuthority)',
      );
    }
    return certificates.pin(endpoint);
  }

  /**
   * HTTPS, or plain HTTP on this host (no network crossed), or plain HTTP where it was allowed: then
   * with a warning naming the service, whose objects and replies cross the network in the clear.
   */
  #checkScheme(name: string, url: string): void {
    const { protocol, hostname } = new URL(url);
    if (protocol === 'https:') return;
    if (protocol === 'http:' && isLoopback(hostname)) return;
    if (protocol === 'http:' && this.#options.settings.plainHttp) {
      this.#options.logger.warning(
        `function service "${name}" is called over plain HTTP at ${url} (--allow-plain-http): its calls ` +
          'and replies cross the network readable and unauthenticated, safe only where the network encrypts (a mesh)',
      );
      return;
    }
    throw new Error(
      `${url}: function services are called over HTTPS, or plain HTTP on this host; to call one over ` +
        'plain HTTP across a network you trust, allow it (--allow-plain-http, settings.calls.plainHttp)',
    );
  }

  /** The service, once the gateway found nothing in its manifest beyond its scope (the caller closes its way otherwise). */
  async #vetted(service: FunctionService): Promise<FunctionService> {
    await this.#options.scope?.vet(service);
    return service;
  }

  /** A service over HTTP has a pinned scope, or the gateway was told to serve it unscoped, and says so. */
  #checkPinned(endpoint: FunctionEndpoint): void {
    if (endpoint.scope) return;
    if (!this.#options.settings.unscoped) {
      throw new ScopeError(
        `function service "${endpoint.name}" has no scope: pin what it may reach (--function-scope, ` +
          "a FunctionService's spec.scope), or serve it unscoped (--unscoped)",
      );
    }
    this.#options.logger.warning(
      `function service "${endpoint.name}" is served unscoped (--unscoped): what it answers is done with ` +
        "the gateway's rights, on any resource they reach",
    );
  }

  #tell(name: string): void {
    for (const listener of this.#listeners) listener(name);
  }

  async #change(slot: Slot, next: FunctionService): Promise<void> {
    const previous = slot.current;
    if (previous === next) return;
    slot.current = next;
    await this.#onChange?.(previous, next);
  }

  /** Tries to connect until it does, saying why each time it cannot (until `signal` aborts). */
  async #connectWithRetry(
    where: string,
    connect: () => Promise<FunctionService>,
    signal: AbortSignal,
  ): Promise<FunctionService> {
    const { logger } = this.#options;
    for (let failures = 0; ; failures++) {
      try {
        const service = await connect();
        const ids = service.manifest.handlers.map((handler) => handler.id).join(', ');
        logger.info(`function service "${service.name}" at ${service.url}: handlers ${ids || '(none)'}`);
        if (service.unknownKinds.length > 0) {
          logger.warning(
            `"${service.name}" declares handler kinds this gateway does not know: ${service.unknownKinds.join(', ')}`,
          );
        }
        return service;
      } catch (error) {
        // Refused (beyond its pin, malformed) is how it is deployed, not an outage: waiting would not mend it.
        if (signal.aborted || isRefusal(error)) throw error;
        logger.warning(`function service ${where} is not reachable yet`, { err: describe(error) });
        await sleep(backoffDelay(CONNECT_BACKOFF, failures), signal);
      }
    }
  }
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
