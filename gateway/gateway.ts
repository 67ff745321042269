/**
 * Wires the gateway together: connects to the function services, resolves the resources their
 * handlers name, decides where state is kept for each, and runs one watcher per resource and scope
 * feeding one queue per resource.
 */
import { KubeConfig } from '@kubernetes/client-node';
import { type HandlerSpec, isAdmissionKind } from '../protocol/index.ts';
import {
  bindHandlers,
  firstOutsideScope,
  type Group,
  outsideScope,
  resourceKey,
  serveGroups,
  type Unresolved,
} from './binding.ts';
import { Components, component } from './components.ts';
import type { FunctionService } from './dispatch/function-service.ts';
import { ScopeError } from './dispatch/scope.ts';
import { type FunctionEndpoint, FunctionServices } from './dispatch/services.ts';
import { hmacSigner, keySigner, type Signer } from './dispatch/signer.ts';
import type { FetchHandler } from './dispatch/transport.ts';
import { Activities } from './engines/activities.ts';
import { Admission } from './engines/admission.ts';
import { Daemons } from './engines/daemons.ts';
import { DEFAULT_DEV_SESSION_SECONDS, DevSessionRoutes, DevSessions } from './engines/dev-sessions.ts';
import { EventHandlers } from './engines/event-handlers.ts';
import { FunctionCertificates } from './engines/function-certificates.ts';
import { FunctionServiceObjects } from './engines/function-service-objects.ts';
import { Indexes } from './engines/indexes.ts';
import { LivenessEndpoint } from './engines/liveness.ts';
import { loginThrough } from './engines/login.ts';
import { SigningKeys } from './engines/signing-keys.ts';
import { Timers } from './engines/timers.ts';
import { DEFAULT_IDENTITY, type Identity } from './identity.ts';
import { KubeClient } from './kube/client.ts';
import {
  type DiscoveredResource,
  DiscoveryCache,
  describe,
  kindSelector,
  ResourceNotFound,
  selectsSeveral,
} from './kube/discovery.ts';
import { ApiError } from './kube/errors.ts';
import { createLogger, type Logger } from './logging.ts';
import { kubeReactorApi } from './reactor/api.ts';
import { functionServiceCaller } from './reactor/calls.ts';
import { ResourceReactor } from './reactor/cycle.ts';
import { needsFinalizer } from './reactor/finalizers.ts';
import { ObjectMemory } from './reactor/memory.ts';
import { candidatesOf, type ServedResource } from './reactor/model.ts';
import { ObjectQueue } from './reactor/queue.ts';
import { type SettingsPatch, settingsWith } from './settings.ts';
import { statusKeeps, versionSchema } from './state/schema.ts';
import { type StateLocation, StateStorage } from './state/storage.ts';
import { sleep } from './timing.ts';
import { NamespaceWatch, selectNamespaces } from './watching/namespaces.ts';
import { ResourceWatch } from './watching/resource-watch.ts';
import { sharedLabelSelector } from './watching/selectors.ts';

export interface GatewayOptions {
  /**
   * Function services: by name and base URL (the name pinned: a service that answers as another is
   * refused), or fetch handlers to call in this process (`causeway run`).
   */
  functions: ReadonlyArray<FunctionEndpoint | FetchHandler>;
  /**
   * A secret (≥ 32 bytes) shared with the function services that have none of their own, for HS256.
   * Ignored where the gateway has signing keys (`settings.signing.keys`), which it signs with instead.
   */
  secret?: Uint8Array;
  /** Namespaces to serve: names, globs (`team-*`), negations (`!kube-*`); undefined serves all of them. */
  namespaces?: readonly string[];
  /** Defaults to the usual kubeconfig lookup: $KUBECONFIG, ~/.kube/config, in-cluster. */
  kubeconfig?: KubeConfig;
  identity?: Partial<Identity>;
  logger?: Logger;
  /** Tunables by section (see Settings); what is not given keeps its default. */
  settings?: SettingsPatch;
  /**
   * Let `causeway dev` sessions send a service's calls to a laptop: the namespace whose Leases name
   * them (see engines/dev-sessions.ts). Only for a service that allows them (its FunctionService's
   * `spec.devSessions`, or `FunctionEndpoint.devSessions`), to a URL it allows.
   */
  devSessions?: string;
  /**
   * Also serve the function services that FunctionService objects (causeway.dev/v1alpha1) in this
   * namespace name, as they are added, changed and removed, and follow the dev sessions their
   * `devSession` fields hold where their `spec.devSessions` allows. Their URLs may not name a
   * loopback or link-local host unless `settings.calls.allowLoopback`.
   */
  functionServices?: string;
  /**
   * Serve a liveness endpoint at this URL (e.g. `http://0.0.0.0:8080/healthz`): 200 with the probe
   * handlers' results while the gateway is healthy, 500 with the reason otherwise (engines/liveness.ts).
   */
  liveness?: string;
  /**
   * Log in to the Kubernetes API through this function service's login handler, instead of with a
   * kubeconfig (engines/login.ts). Until then the gateway has no cluster access, so the calls to the
   * service are signed without one: with a secret shared with it, or unsigned in this process.
   */
  loginFrom?: string;
}

export interface Gateway {
  /** Resolves once every watched resource has been listed and its objects queued. */
  readonly synced: Promise<void>;
  /** The liveness endpoint's URL, its port known, when there is one. */
  readonly liveness: string | undefined;
  /** Reads the function services' manifests again now (as it does every `calls.manifestRefreshMs`). */
  refresh(): Promise<void>;
  stop(): Promise<void>;
}

export async function startGateway(options: GatewayOptions): Promise<Gateway> {
  const logger = options.logger ?? createLogger();
  const identity = { ...DEFAULT_IDENTITY, ...options.identity };
  const settings = settingsWith(options.settings);
  const components = new Components(logger);
  const stopping = new AbortController();

  if (options.loginFrom && options.kubeconfig) {
    throw new Error(`a kubeconfig is given as well as a login through "${options.loginFrom}": give one`);
  }
  // Logging in through a service, the gateway has no credentials until it has asked it.
  const early = options.loginFrom
    ? undefined
    : await KubeClient.fromConfig(options.kubeconfig ?? defaultKubeConfig());
  const earlyDiscovery = early ? new DiscoveryCache(early) : undefined;
  let signer: Signer | undefined = options.secret ? hmacSigner(options.secret) : undefined;
  if (settings.signing.keys) {
    if (!early) {
      throw new Error(
        `the gateway cannot read its signing keys from a Secret before it logs in through "${options.loginFrom}", ` +
          'whose calls they would sign: share a secret with that service instead (--function-secret, --secret-file)',
      );
    }
    // Loaded before any service is asked for its manifest: that request is signed too.
    const keys = new SigningKeys({
      client: early,
      location: settings.signing.keys,
      settings: settings.signing,
      logger,
    });
    await keys.start();
    await components.add(component(keys.name, keys.leaderOnly, { stop: () => keys.stop() }));
    signer = keySigner(() => keys.current());
  }
  let certificates: FunctionCertificates | undefined;
  if (settings.calls.certificateAuthority) {
    if (!early) {
      throw new Error(
        `the gateway cannot issue the function services' certificates before it logs in through "${options.loginFrom}"`,
      );
    }
    // Loaded before any service is asked for its manifest: its certificate is issued first.
    const issuer = new FunctionCertificates({
      client: early,
      authority: settings.calls.certificateAuthority,
      checkMs: settings.calls.certificateCheckMs,
      logger,
    });
    await stoppedOnFailure(components, () => issuer.start());
    await components.add(component(issuer.name, issuer.leaderOnly, { stop: () => issuer.stop() }));
    certificates = issuer;
  }
  const indexes = new Indexes({
    batchSize: settings.calls.indexBatchSize,
    batchBytes: settings.calls.indexBatchBytes,
    retryDelaysS: settings.calls.serviceRetryDelaysS,
    stopping: stopping.signal,
    logger,
  });
  const services = new FunctionServices({
    signer,
    settings: settings.calls,
    indexes,
    ...(certificates ? { certificates } : {}),
    logger,
    onChange: (previous, next) => exclusively(() => rebind(previous, next)),
    // A service whose manifest names a resource beyond its scope is refused as a whole, before any of
    // its handlers is served; one that logs in for the gateway is looked at handler by handler instead.
    vet: async (service) => {
      const refused = earlyDiscovery && firstOutsideScope(service, await earlyDiscovery.reload());
      if (refused) throw new ScopeError(`${refused}: the service is not served`);
    },
    guard: {
      identity,
      // Asked only about objects, which come once the watches (and so `discovery`) are up.
      resourceOf: (apiVersion, kind) => discovery.resolve(kindSelector(apiVersion, kind)),
    },
  });
  await services.connect(options.functions, stopping.signal);
  await components.add(component('function services', false, { stop: () => services.close() }));
  const activities = new Activities({
    services: () => services.current,
    retryDelaysS: settings.calls.serviceRetryDelaysS,
    logger,
  });
  // Before any watch: a startup that fails fails the start, and nothing is left running.
  const client = await stoppedOnFailure(components, async () => {
    await activities.startup();
    if (early) return early;
    const service = serviceNamed(services.current, options.loginFrom as string);
    return KubeClient.fromLogin(loginThrough(service, activities, stopping.signal, logger));
  });
  // Added before the cleanup, so stopped after it: while cleanup handlers run, it answers 500.
  const liveness = options.liveness
    ? new LivenessEndpoint({
        url: options.liveness,
        probe: () => activities.probe(),
        down: () =>
          services.current.flatMap(({ name, down }) =>
            down ? [`function service "${name}" is down: ${down}`] : [],
          ),
        stopping: stopping.signal,
        cacheMs: settings.activities.probeCacheMs,
        logger,
      })
    : undefined;
  if (liveness) await components.add(liveness);
  await components.add(
    component('cleanup handlers', false, {
      stop: () => activities.cleanup(settings.activities.cleanupTimeoutMs),
    }),
  );
  const discovery = earlyDiscovery ?? new DiscoveryCache(client);
  const selection = options.namespaces ? selectNamespaces(options.namespaces) : undefined;
  const namespaceWatch =
    selection && !selection.names
      ? new NamespaceWatch(client, selection, logger, settings.watching)
      : undefined;
  if (namespaceWatch) {
    await components.add(
      component('namespace watch', true, {
        start: () => namespaceWatch.start(),
        stop: () => namespaceWatch.stop(),
      }),
    );
  }
  const served = new Map<string, { entry: ServedResource; watch: ResourceWatch }>();
  /** Resources some admission handler reviews. */
  const reviewedKeys = new Set<string>();
  /** Made when a service first has admission handlers: until then no webhook server runs. */
  let admission: Admission | undefined;
  async function admitting(): Promise<Admission> {
    if (admission) return admission;
    admission = new Admission({
      client,
      identity,
      settings: settings.admission,
      namespaces: selection?.names,
      serves: (namespace) => namespace === undefined || !selection || selection.matches(namespace),
      logger,
    });
    if (started) await components.add(admission); // started now; at the start otherwise
    return admission;
  }
  let started = false;
  const synced: Promise<void>[] = [];

  /**
   * Adds handlers to the resource they name. The first time, builds what serves it (state storage,
   * reactor, queue, event handlers, watch) as parts of the gateway; later, watches again when the new
   * handlers change which labels every handler requires.
   */
  async function serve(resource: DiscoveredResource, items: Unresolved[]): Promise<void> {
    const key = resourceKey(resource);
    const reviewed = items.filter(({ handler }) => isAdmissionHandler(handler));
    for (const service of new Set(reviewed.map((item) => item.service))) {
      const handlers = reviewed.filter((item) => item.service === service).map((item) => item.handler);
      (await admitting()).serve(service, handlers, resource);
    }
    items = items.filter(({ handler }) => !isAdmissionHandler(handler));
    if (reviewed.length > 0) reviewedKeys.add(key);
    if (items.length === 0) return; // reviewed only: nothing to watch
    const existing = served.get(key);
    if (existing) {
      bindHandlers(existing.entry, items);
      holdAtCreation(key, existing.entry);
      await existing.watch.reselect(selectorOf(existing.entry));
      return;
    }
    const location =
      settings.persistence.stateIn === 'annotations'
        ? 'annotations'
        : await chooseStateLocation(client, resource, identity, logger);
    const entry: ServedResource = {
      resource,
      bindings: [],
      storage: new StateStorage(location, identity, settings.persistence.adoptKopf),
    };
    bindHandlers(entry, items);
    const api = kubeReactorApi(client, discovery, resource, identity.fieldManager);
    const memory = new ObjectMemory();
    const reactor = new ResourceReactor({
      served: entry,
      api,
      call: functionServiceCaller(settings.calls.serviceRetryDelaysS),
      identity,
      logger,
      conflictRetryMs: settings.processing.conflictRetryMs,
      memory,
      beforeDeletion: (uid) => daemons.ended(uid),
    });
    const queue = new ObjectQueue({
      ...settings.processing,
      process: (object) => reactor.run(object),
      refresh: (object) => api.read(object),
      logger,
    });
    const eventHandlers = new EventHandlers(entry, api, logger);
    const indexFeed = indexes.feed(entry);
    const daemons = new Daemons({
      served: entry,
      api,
      memory,
      roundMs: settings.calls.daemonRoundMs,
      retryDelaysS: settings.calls.serviceRetryDelaysS,
      annotationPrefix: identity.annotationPrefix,
      logger,
    });
    const timers = new Timers({
      served: entry,
      api,
      memory,
      retryDelaysS: settings.calls.serviceRetryDelaysS,
      concurrency: settings.processing.concurrency,
      annotationPrefix: identity.annotationPrefix,
      logger,
    });
    const watch = new ResourceWatch({
      client,
      resource,
      logger,
      selection,
      namespaceWatch,
      settings: settings.watching,
      onListing: (listed) => {
        synced.push(listed);
        indexFeed.listing(listed);
      },
      onEvent: ({ type, object, initial }) => {
        if (initial) reactor.listedAtStart(object.metadata.uid);
        indexFeed.observe(type, object);
        eventHandlers.push(type, object);
        timers.observe(type, object);
        daemons.observe(type, object);
        if (type === 'DELETED') reactor.forget(object.metadata.uid);
        queue.push(type, object);
      },
    });
    served.set(key, { entry, watch });
    holdAtCreation(key, entry);
    // Added in this order, stopped in the reverse: no new events, then the cycles finish, then event calls.
    await components.add(component(`event handlers of ${key}`, true, { stop: () => eventHandlers.stop() }));
    await components.add(component(`timers of ${key}`, true, { stop: () => timers.stop() }));
    await components.add(component(`daemons of ${key}`, true, { stop: () => daemons.stop() }));
    await components.add(component(`queue of ${key}`, true, { stop: () => queue.stop() }));
    await components.add(
      component(`watch of ${key}`, true, {
        start: () => {
          watch.start(selectorOf(entry));
          indexFeed.watching();
        },
        stop: () => watch.stop(),
      }),
    );
    // Stopped first: the calls waiting for its indexes go on, so the queues can finish.
    await components.add(component(`indexes of ${key}`, true, { stop: () => indexFeed.stop() }));
  }

  /**
   * Where the gateway serves admission for a resource with delete handlers, its own webhook puts the
   * finalizer on at creation, which then costs no write of its own.
   */
  function holdAtCreation(key: string, entry: ServedResource): void {
    if (!admission || !reviewedKeys.has(key)) return;
    if (!entry.bindings.some(({ handlers }) => handlers.some((handler) => handler.kind === 'delete'))) return;
    admission.holdAtCreation(entry.resource, (object) => needsFinalizer(object, candidatesOf(entry)));
  }

  /**
   * Serves every handler whose resource discovery knows now, and those by category on the resources
   * of it not served yet. Returns the others, those by category (which more resources may join) and,
   * when serving a resource failed, those it did not serve, with the error.
   */
  async function resolve(
    pending: Unresolved[],
    announce: boolean,
  ): Promise<{ left: Unresolved[]; error?: unknown }> {
    const { groups, left } = await locate(pending, announce);
    const { unserved, error } = await serveGroups(groups, ({ resource, items }) => serve(resource, items));
    if (groups.size > 0) await admission?.sync();
    return { left: [...new Set([...left, ...unserved])], ...(error === undefined ? {} : { error }) };
  }

  /**
   * Groups handlers by the resource discovery finds for them now; `left` are those it does not know,
   * and those by category or `*`, which are never found for good: each resource of theirs is grouped
   * once, the first time it is seen, so that those that join later are served in turn.
   */
  async function locate(pending: Unresolved[], announce: boolean) {
    const current = await discovery.reload();
    const left: Unresolved[] = [];
    const byResource = new Map<string, Group>();
    const add = (resource: DiscoveredResource, item: Unresolved) => {
      const key = resourceKey(resource);
      const group = byResource.get(key) ?? { resource, items: [] };
      group.items.push(item);
      byResource.set(key, group);
    };
    for (const item of pending) {
      const { handler, service } = item;
      if (selectsSeveral(handler.resource)) {
        left.push(item);
        item.servedOn ??= new Set();
        const servedOn = item.servedOn;
        const joined = current
          .select(handler.resource)
          .filter((resource) => !servedOn.has(resourceKey(resource)));
        for (const resource of joined) servedOn.add(resourceKey(resource));
        // Of a category, only the members in the service's scope: the others are no concern of it.
        const inScope = joined.filter((resource) => !outsideScope(service, handler, resource));
        for (const resource of inScope) add(resource, item);
        if (inScope.length > 0) {
          logger.info(
            `handler "${handler.id}" of "${service.name}" (${describe(handler.resource)}) is served on ` +
              inScope.map(resourceKey).join(', '),
          );
        } else if (announce && servedOn.size === 0) {
          logger.info(
            `handler "${handler.id}" of "${service.name}": no resource ${describe(handler.resource)} yet; ` +
              'each will be served as it appears',
          );
        }
        continue;
      }
      try {
        const resource = current.resolve(handler.resource);
        const refused = outsideScope(service, handler, resource);
        if (refused) logger.error(`${refused}: it is not served`);
        else add(resource, item);
      } catch (error) {
        if (!(error instanceof ResourceNotFound)) throw error;
        left.push(item);
        if (announce) {
          logger.warning(
            `handler "${item.handler.id}" of "${item.service.name}": ${error.message}; ` +
              'it will be served once the resource appears',
          );
        }
      }
    }
    return { groups: byResource, left };
  }

  /** Handlers whose resource is not there yet (a CRD applied later), and those by category or `*`. */
  let pending: Unresolved[] = [];
  let lookingLater: Promise<void> | undefined;

  /**
   * Looks for the resources of `items` again, less and less often (every 30 s at last), until each
   * is served; for handlers by category or `*`, for as long as the gateway runs.
   */
  function resolveLater(items: Unresolved[]): void {
    pending.push(...items);
    if (!started || lookingLater || pending.length === 0) return;
    lookingLater = (async () => {
      for (let delay = 1000; pending.length > 0; delay = Math.min(delay * 2, 30_000)) {
        await sleep(delay, stopping.signal);
        if (stopping.signal.aborted) return;
        try {
          await exclusively(async () => {
            const batch = pending;
            pending = [];
            let resolved: Awaited<ReturnType<typeof resolve>>;
            try {
              resolved = await resolve(batch, false);
            } catch (error) {
              pending.push(...batch); // discovery failed: nothing was served
              throw error;
            }
            pending.push(...resolved.left);
            if (resolved.error !== undefined) throw resolved.error;
          });
        } catch (error) {
          logger.warning(
            `serving handlers found later failed, retrying: ${error instanceof Error ? error.message : error}`,
          );
        }
      }
    })().finally(() => {
      lookingLater = undefined;
    });
  }

  /**
   * Another service answers for a name now (redeployed with other handlers, redirected by a dev
   * session, or given anew): its handlers replace the previous one's. Cycles under way finish with
   * the previous one. A service added has no previous one; a service removed, no next.
   */
  async function rebind(
    previous: FunctionService | undefined,
    given: FunctionService | undefined,
  ): Promise<void> {
    // A service that joins the running gateway starts as those at the start did: its handlers are
    // served once its startup handlers have succeeded, and not at all if they fail.
    const joined = given && !previous && started;
    const next = joined && !(await activities.startupOf(given, stopping.signal)) ? undefined : given;
    if (given && !next) {
      logger.error(`function service "${given.name}" is not served: its startup handlers did not succeed`);
    }
    const { groups, left } = await locate(handlersOf(next ? [next] : []), true);
    // In one step, with no await: a cycle sees the handlers of one service or the other, never neither
    // (with neither, it would take an object for unhandled, or release its finalizer).
    const rebound = new Set<string>();
    for (const [key, { entry }] of served) {
      const before = entry.bindings.length;
      entry.bindings = entry.bindings.filter((binding) => binding.service !== previous);
      const group = groups.get(key);
      if (entry.bindings.length !== before || group) rebound.add(key);
      if (!group) continue;
      bindHandlers(
        entry,
        group.items.filter(({ handler }) => !isAdmissionHandler(handler)),
      );
      group.items = group.items.filter(({ handler }) => isAdmissionHandler(handler));
      holdAtCreation(key, entry);
    }
    if (previous) admission?.retire(previous); // its webhooks answer until the next ones are configured
    pending = pending.filter((item) => item.service !== previous);
    const { unserved, error } = await serveGroups(groups, ({ resource, items }) => serve(resource, items));
    await admission?.sync();
    // What could not be served now is looked for again, as handlers whose resource appears later are.
    resolveLater([...new Set([...left, ...unserved])]);
    // Its objects are looked at again with the handlers they have now: one a removed service left
    // unhandled is handled by the one that comes (a cycle that finds nothing new writes nothing).
    for (const [key, { entry, watch }] of served) await watch.reselect(selectorOf(entry), rebound.has(key));
    if (error !== undefined) throw error;
  }

  /** Changes to what is served happen one at a time. */
  let changing: Promise<unknown> = Promise.resolve();
  function exclusively<T>(change: () => Promise<T>): Promise<T> {
    const result = changing.then(change);
    changing = result.catch(() => {});
    return result;
  }

  const { left: unresolved, error: unserved } = await resolve(handlersOf(services.current), true);
  if (unserved !== undefined) throw unserved;
  if (admission) await components.add(admission);
  let refreshing: NodeJS.Timeout | undefined;
  await components.add(
    component('resource discovery and manifest refresh', false, {
      start: () => {
        started = true;
        resolveLater(unresolved);
        refreshing = setInterval(() => void services.refresh(), settings.calls.manifestRefreshMs);
      },
      stop: async () => {
        clearInterval(refreshing);
        stopping.abort();
        await lookingLater;
        await changing;
      },
    }),
  );
  // Dev sessions, held by Leases or by FunctionServices' fields, route calls through one table, for
  // the services that allow them: by their FunctionService's spec, or as given (--function-dev-sessions).
  let objects: FunctionServiceObjects | undefined;
  const routes = new DevSessionRoutes({
    redirect: (name, to) => services.redirect(name, to),
    allowedFor: (name) => {
      const given = options.functions.find((endpoint) => 'url' in endpoint && endpoint.name === name);
      const allowed = given && 'url' in given ? given.devSessions : undefined;
      return (
        objects?.devSessionsAllowed(name) ??
        (allowed && { urls: allowed.urls, maxSeconds: allowed.maxSeconds ?? DEFAULT_DEV_SESSION_SECONDS })
      );
    },
    logger,
  });
  if (options.functionServices || options.devSessions) await components.add(routes);
  if (options.functionServices) {
    objects = new FunctionServiceObjects({
      client,
      namespace: options.functionServices,
      services,
      routes,
      settings,
      logger,
      given: new Set(services.current.map((service) => service.name)),
    });
    await components.add(objects);
  }
  if (options.devSessions) {
    await components.add(
      new DevSessions({
        client,
        namespace: options.devSessions,
        identity,
        settings: settings.watching,
        logger,
        routes,
      }),
    );
  }
  try {
    await components.start();
  } catch (error) {
    await components.stop(); // what did start stops again: a failed start leaves nothing running
    throw error;
  }
  let stopped: Promise<void> | undefined;
  return {
    synced: Promise.all(synced).then(() => undefined),
    liveness: liveness?.url,
    refresh: () => services.refresh(),
    stop: () => {
      stopping.abort(); // at once: the liveness endpoint says so while the parts stop
      stopped ??= components.stop();
      return stopped;
    },
  };
}

/** Runs a step of the start; when it fails, what did start stops again before the failure is thrown. */
async function stoppedOnFailure<T>(components: Components, step: () => Promise<T>): Promise<T> {
  try {
    return await step();
  } catch (error) {
    await components.stop();
    throw error;
  }
}

/** The service named `name`, to log in through. */
function serviceNamed(services: readonly FunctionService[], name: string): FunctionService {
  const service = services.find((candidate) => candidate.name === name);
  if (service) return service;
  throw new Error(
    `the gateway is to log in through "${name}", which is none of its function services: ` +
      services.map((candidate) => `"${candidate.name}"`).join(', '),
  );
}

function handlersOf(services: readonly FunctionService[]): Unresolved[] {
  return services.flatMap((service) => service.manifest.handlers.map((handler) => ({ service, handler })));
}

function isAdmissionHandler(handler: HandlerSpec): boolean {
  return isAdmissionKind(handler.kind);
}

function selectorOf(entry: ServedResource): string | undefined {
  return sharedLabelSelector(entry.bindings.flatMap((binding) => binding.handlers));
}

function defaultKubeConfig(): KubeConfig {
  const config = new KubeConfig();
  config.loadFromDefault();
  return config;
}

/**
 * State goes in the status when the status is a subresource whose schema keeps our key: then results
 * and state share one write. Otherwise annotations. Built-in resources have fixed status schemas.
 */
async function chooseStateLocation(
  client: KubeClient,
  resource: DiscoveredResource,
  identity: Identity,
  logger: Logger,
): Promise<StateLocation> {
  if (!resource.subresources.includes('status') || resource.group === '' || !resource.group.includes('.')) {
    return 'annotations';
  }
  try {
    const crd = await client.get<Parameters<typeof versionSchema>[0]>(
      `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${resource.plural}.${resource.group}`,
    );
    if (statusKeeps(versionSchema(crd, resource.version), identity.statusKey)) return 'status';
    logger.warning(
      `${resource.plural}.${resource.group}: the schema of status prunes status.${identity.statusKey}; ` +
        'keeping state in annotations (add x-kubernetes-preserve-unknown-fields to status to save a write per change)',
    );
    return 'annotations';
  } catch (error) {
    // Without read access to CRDs, try the status; a pruned write is detected and moves state to annotations.
    if (error instanceof ApiError && (error.status === 403 || error.status === 404)) return 'status';
    throw error;
  }
}
