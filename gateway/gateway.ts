/**
 * Composes the gateway: its credentials, the function services, their activities, the handler binder
 * that gives each watched resource a pipeline and each reviewed one a webhook, and the engines that
 * follow FunctionService objects and dev sessions. The parts start in the order they are added and
 * stop in the reverse.
 */
import type { KubeConfig } from '@kubernetes/client-node';
import { AdmissionHost } from './admission/host.ts';
import { HandlerBinder } from './binding/binder.ts';
import { bindHandlers, firstOutsideScope, resourceKey } from './binding/binding.ts';
import { ScopeError } from './dispatch/scope.ts';
import { type FunctionEndpoint, FunctionServices } from './dispatch/services.ts';
import type { FetchHandler } from './dispatch/transport.ts';
import { HealthEndpoint } from './health/endpoint.ts';
import { DEFAULT_IDENTITY, type Identity } from './identity.ts';
import type { KubeClient, RequestObserver } from './kube/client.ts';
import { DiscoveryCache, kindSelector } from './kube/discovery.ts';
import { reachabilityLog } from './kube/reachability.ts';
import { createLogger, type Logger } from './logging.ts';
import { Components, component } from './manager/manager.ts';
import { MetricsEndpoint, metricsAddress } from './metrics/endpoint.ts';
import { GatewayMetrics } from './metrics/metrics.ts';
import { clusterClient, setUpCredentials, stoppedOnFailure } from './modules/trust.ts';
import { Peering, type PeeringOptions } from './peering/peering.ts';
import { checkOwnRights, type RbacCheck } from './rbac/at-start.ts';
import type { ServedResource } from './reactor/model.ts';
import { Indexes } from './resource/indexes.ts';
import { ResourcePipeline, stateLocation } from './resource/pipeline.ts';
import { Activities } from './services/activities.ts';
import { DEFAULT_DEV_SESSION_SECONDS, DevSessionRoutes, DevSessions } from './services/dev-sessions.ts';
import { FunctionServiceObjects } from './services/function-service-objects.ts';
import { type Settings, type SettingsPatch, settingsWith } from './settings.ts';
import { StateStorage } from './state/storage.ts';
import { NamespaceWatch, selectNamespaces } from './watching/namespaces.ts';

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
   * them (see services/dev-sessions.ts). Only for a service that allows them (its FunctionService's
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
   * handlers' results while the gateway can work, 500 with the reasons otherwise; and readiness at
   * `/readyz` on its host and port: 200 once it serves, 503 with the reasons until then and while it
   * stops. A function service down fails neither: both report it (health/endpoint.ts).
   */
  liveness?: string;
  /**
   * Log in to the Kubernetes API through this function service's login handler, instead of with a
   * kubeconfig (services/login.ts). Until then the gateway has no cluster access, so the calls to the
   * service are signed without one: with a secret shared with it, or unsigned in this process.
   */
  loginFrom?: string;
  /**
   * Coordinate with the other gateways of this identity through Leases in a namespace: one of them
   * (the highest priority's oldest) leads and runs the watches, reactors, timers and daemons; the
   * others stand by, serving admission and health. Undefined: this gateway is alone, and leads.
   */
  peering?: PeeringOptions;
  /**
   * Check at start that the cluster grants the gateway the RBAC its flags and services need
   * (rbac/at-start.ts): refuse to start, or warn, when it does not. Checked once its services are
   * read (with its signing keys and their certificates, made first), before anything is watched or
   * any other write. Undefined: not checked.
   */
  rbacCheck?: RbacCheck;
  /**
   * Serve Prometheus metrics at `/metrics` on this address (`HOST:PORT`, `:9090` for every address,
   * port 0 for any free one), on every replica (docs/observability.md). Undefined: none are kept.
   */
  metrics?: string;
}

export interface Gateway {
  /** Resolves once every watched resource has been listed and its objects queued. */
  readonly synced: Promise<void>;
  /** The liveness endpoint's URL, its port known, when there is one. */
  readonly liveness: string | undefined;
  /** The readiness endpoint's URL, beside the liveness endpoint's, when there is one. */
  readonly readiness: string | undefined;
  /** The metrics endpoint's URL, its port known, when there is one. */
  readonly metrics: string | undefined;
  /** Reads the function services' manifests again now (as it does every `calls.manifestRefreshMs`). */
  refresh(): Promise<void>;
  /** Whether this gateway leads now: always when alone; with peering, as its peers and it agree. */
  readonly leading: boolean;
  stop(): Promise<void>;
}

export async function startGateway(options: GatewayOptions): Promise<Gateway> {
  const logger = options.logger ?? createLogger();
  const identity = { ...DEFAULT_IDENTITY, ...options.identity };
  const settings = settingsWith(options.settings);
  const components = new Components(logger, { leading: !options.peering });
  const stopping = new AbortController();
  const metrics = options.metrics ? new GatewayMetrics() : undefined;
  // First: it starts before the rest, and stops after it.
  const metricsEndpoint =
    metrics && new MetricsEndpoint(metrics, metricsAddress(options.metrics as string), logger);
  if (metricsEndpoint) await components.add(metricsEndpoint);
  if (metrics) await components.add(metrics.eventLoop);

  const reachability = reachabilityLog(logger);
  const observeRequest: RequestObserver = (method, path, status, error) => {
    metrics?.apiRequest(method, path, status);
    reachability(method, path, status, error);
  };
  const credentials = await setUpCredentials(
    {
      kubeconfig: options.kubeconfig,
      loginFrom: options.loginFrom,
      secret: options.secret,
      settings,
      logger,
      observe: observeRequest,
    },
    components,
  );
  const earlyDiscovery = credentials.client ? new DiscoveryCache(credentials.client) : undefined;
  const indexes = new Indexes({
    batchSize: settings.calls.indexBatchSize,
    batchBytes: settings.calls.indexBatchBytes,
    retryDelaysS: settings.calls.serviceRetryDelaysS,
    stopping: stopping.signal,
    logger,
  });
  let binder: HandlerBinder | undefined;
  const services = new FunctionServices({
    signer: credentials.signer,
    settings: settings.calls,
    indexes,
    ...(credentials.certificates ? { certificates: credentials.certificates } : {}),
    logger,
    // Services change once the gateway serves them, after the binder is made.
    onChange: (previous, next) => (binder as HandlerBinder).rebind(previous, next),
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
    ...(metrics ? { observer: metrics.calls } : {}),
  });
  metrics?.watchBreakers(() => services.current.map(({ name, down }) => [name, down !== undefined]));
  await services.connect(options.functions, stopping.signal);
  await components.add(component('function services', false, { stop: () => services.close() }));
  const { rbacCheck } = options;
  if (rbacCheck) {
    const starting = {
      client: credentials.client,
      services: services.current,
      signer: credentials.signer,
      ca: settings.calls.ca,
      ...(earlyDiscovery ? { discovery: earlyDiscovery } : {}),
      logger,
    };
    await stoppedOnFailure(components, () => checkOwnRights(rbacCheck, starting));
  }
  const activities = new Activities({
    services: () => services.current,
    retryDelaysS: settings.calls.serviceRetryDelaysS,
    logger,
  });
  // Before any watch: a startup that fails fails the start, and nothing is left running.
  const client = await stoppedOnFailure(components, async () => {
    await activities.startup();
    const login = { from: options.loginFrom, services: services.current, activities };
    return clusterClient(credentials, login, stopping.signal, logger, observeRequest);
  });
  let listed = false; // the watched resources' first lists are in: Gateway.synced resolved
  const webhookServerDown = () =>
    admission.serving === false ? ['the admission webhook server is not serving'] : [];
  // Added before the cleanup, so stopped after it: while cleanup handlers run, it says it is stopping.
  const health = options.liveness
    ? new HealthEndpoint({
        url: options.liveness,
        probe: () => activities.probe(),
        down: () =>
          Object.fromEntries(
            services.current.flatMap(({ name, down }) => (down ? [[name, down] as const] : [])),
          ),
        faults: webhookServerDown,
        notReady: () => [
          ...(listed ? [] : ['the watched resources are not listed yet']),
          ...webhookServerDown(),
        ],
        stopping: stopping.signal,
        cacheMs: settings.activities.probeCacheMs,
        logger,
      })
    : undefined;
  if (health) await components.add(health);
  await components.add(
    component('cleanup handlers', false, {
      stop: () => activities.cleanup(settings.activities.cleanupTimeoutMs),
    }),
  );
  const peering = options.peering
    ? new Peering({
        ...options.peering,
        client,
        prefix: identity.annotationPrefix,
        settings: settings.peering,
        components,
        logger,
      })
    : undefined;
  // Before the pipelines, so stopped after them: its Lease goes once nothing of this gateway writes.
  if (peering) await components.add(peering);
  if (peering) metrics?.watchLeading(identity.annotationPrefix, () => components.leading);
  const discovery = earlyDiscovery ?? new DiscoveryCache(client);
  const selection = options.namespaces ? selectNamespaces(options.namespaces) : undefined;
  const namespaceWatch =
    selection && !selection.names
      ? new NamespaceWatch(client, selection, logger, settings.watching)
      : undefined;
  if (namespaceWatch) {
    // On every replica: the pipelines that start and stop with leadership subscribe to it as they run.
    await components.add(
      component('namespace watch', false, {
        start: () => namespaceWatch.start(),
        stop: () => namespaceWatch.stop(),
      }),
    );
  }
  const admission = new AdmissionHost(
    {
      client,
      identity,
      settings: settings.admission,
      namespaces: selection?.names,
      serves: (namespace) => namespace === undefined || !selection || selection.matches(namespace),
      ...(peering ? { othersRunning: () => peering.othersRunning() } : {}),
      logger,
      ...(metrics ? { observeReview: metrics.webhookAnswered } : {}),
    },
    components,
  );
  const synced: Promise<void>[] = [];
  binder = new HandlerBinder({
    discovery,
    admission,
    pipeline: async (resource, items) => {
      const location =
        settings.persistence.stateIn === 'annotations'
          ? 'annotations'
          : await stateLocation(client, resource, identity, logger);
      const served: ServedResource = {
        resource,
        bindings: [],
        storage: new StateStorage(location, identity, settings.persistence.adoptKopf),
      };
      bindHandlers(served, items);
      const pipeline = new ResourcePipeline({
        served,
        key: resourceKey(resource),
        client,
        discovery,
        identity,
        settings,
        indexes,
        selection,
        namespaceWatch,
        logger: logger.child({ resource: resourceKey(resource) }),
        onListing: (listed) => synced.push(listed),
        ...(peering ? { fence: () => peering.fence() } : {}),
        ...(peering && options.peering?.sharding ? { owns: (uid: string) => peering.owns(uid) } : {}),
        ...(metrics ? { observer: metrics.pipeline(resourceKey(resource)) } : {}),
      });
      await components.add(pipeline);
      return pipeline;
    },
    startupOf: (service, signal) => activities.startupOf(service, signal),
    stopping: stopping.signal,
    logger,
  });
  await binder.serve(services.current);
  let refreshing: NodeJS.Timeout | undefined;
  const handlers = binder;
  await components.add(
    component('resource discovery and manifest refresh', false, {
      start: () => {
        handlers.start();
        refreshing = setInterval(() => void services.refresh(), settings.calls.manifestRefreshMs);
      },
      stop: async () => {
        clearInterval(refreshing);
        stopping.abort();
        await handlers.stop();
      },
    }),
  );
  await addDevSessions(options, { client, services, identity, settings, logger, peering }, components);
  try {
    await components.start();
  } catch (error) {
    await components.stop(); // what did start stops again: a failed start leaves nothing running
    throw error;
  }
  let stopped: Promise<void> | undefined;
  return {
    synced: Promise.all(synced).then(() => {
      listed = true;
    }),
    liveness: health?.url,
    readiness: health?.readinessUrl,
    metrics: metricsEndpoint?.url,
    refresh: () => services.refresh(),
    get leading() {
      return components.leading;
    },
    stop: () => {
      stopping.abort(); // at once: the health endpoint says so while the parts stop
      stopped ??= components.stop();
      return stopped;
    },
  };
}

/**
 * Dev sessions, held by Leases or by FunctionServices' fields, route calls through one table, for the
 * services that allow them: by their FunctionService's spec, or as given (--function-dev-sessions).
 * FunctionService objects also add, change and remove services.
 */
async function addDevSessions(
  options: GatewayOptions,
  parts: {
    client: KubeClient;
    services: FunctionServices;
    identity: Identity;
    settings: Settings;
    logger: Logger;
    peering: Peering | undefined;
  },
  components: Components,
): Promise<void> {
  const { client, services, identity, settings, logger, peering } = parts;
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
      ...(peering ? { announces: () => peering.isLeader() } : {}),
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
}
