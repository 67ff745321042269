/**
 * The function services: connected (their manifests read and held to their scopes), checked against
 * the gateway's own rights when asked to, their startup handlers called before anything is watched,
 * and their cleanup handlers called at the stop. The cluster client is known here at last: from a
 * kubeconfig, or from a service's login handler once it has started.
 */
import { ScopeCheck } from '../binding/scope-check.ts';
import { Budgets } from '../dispatch/budget.ts';
import { Refusals } from '../dispatch/refusals.ts';
import { FunctionServices } from '../dispatch/services.ts';
import type { KubeClient } from '../kube/client.ts';
import { DiscoveryCache } from '../kube/discovery.ts';
import { part } from '../manager/manager.ts';
import { checkOwnRights } from '../rbac/at-start.ts';
import { Indexes } from '../resource/indexes.ts';
import { Activities } from '../services/activities.ts';
import { type Ground, startStep } from './ground.ts';
import type { Observability } from './observability.ts';
import { type Credentials, clusterClient } from './trust.ts';

export interface Services {
  services: FunctionServices;
  activities: Activities;
  indexes: Indexes;
  client: KubeClient;
  discovery: DiscoveryCache;
  /** The services refused (their manifest, their webhooks), and why: the others are served. */
  refusals: Refusals;
}

export async function functionServices(
  ground: Ground,
  { metrics, observeRequest }: Observability,
  credentials: Credentials,
): Promise<Services> {
  const { options, identity, settings, logger, manager, stopping } = ground;
  const earlyDiscovery = credentials.client ? new DiscoveryCache(credentials.client) : undefined;
  // Loaded while the manifests are read: their scope check, the rights check and the binding share it.
  void earlyDiscovery?.reload();
  const scope = new ScopeCheck(identity, earlyDiscovery, options.ownNamespace);
  const budgets = new Budgets(settings.calls, metrics?.budgetWaited);
  const indexes = new Indexes({
    batchSize: settings.calls.indexBatchSize,
    batchBytes: settings.calls.indexBatchBytes,
    retryDelaysS: settings.calls.serviceRetryDelaysS,
    bytesPerObject: settings.calls.indexBytesPerObject,
    budgets,
    stopping: stopping.signal,
    logger,
  });
  const refusals = new Refusals();
  metrics?.watchRefusals(() => refusals.readings());
  const services = new FunctionServices({
    refusals,
    signer: credentials.signer,
    settings: settings.calls,
    indexes,
    ...(credentials.certificates ? { certificates: credentials.certificates } : {}),
    logger,
    scope,
    ...(options.impersonate === undefined ? {} : { impersonate: options.impersonate }),
    ...(metrics ? { observer: metrics.calls } : {}),
    budgets,
  });
  metrics?.watchBreakers(() => services.current.map(({ name, down }) => [name, down !== undefined]));
  metrics?.watchBudgets(() => budgets.readings(services.current.map(({ name }) => name)));
  await services.connect(options.functions, stopping.signal);
  startStep(logger, 'function services connected');
  await manager.add('services', part('function services', 'every replica', { stop: () => services.close() }));
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
    await checkOwnRights(rbacCheck, starting);
    startStep(logger, 'own rights checked');
  }
  const activities = new Activities({
    services: () => services.current,
    retryDelaysS: settings.calls.serviceRetryDelaysS,
    logger,
  });
  // Before any watch: a startup that fails fails the start (and startGateway stops what started).
  await activities.startup();
  startStep(logger, 'startup handlers done');
  const login = { from: options.loginFrom, services: services.current, activities };
  const client = await clusterClient(credentials, login, stopping.signal, logger, observeRequest);
  const discovery = earlyDiscovery ?? new DiscoveryCache(client);
  scope.discover(discovery, client);
  startStep(logger, 'cluster client ready');
  await manager.add(
    'cleanup',
    part('cleanup handlers', 'every replica', {
      stop: () => activities.cleanup(settings.activities.cleanupTimeoutMs),
    }),
  );
  return { services, activities, indexes, client, discovery, refusals };
}
