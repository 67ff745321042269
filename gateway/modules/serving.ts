/**
 * Serving: the handlers of the function services bound to what serves them (binding/binder.ts), a
 * pipeline per watched resource and the admission webhooks, in the namespaces served; the health
 * endpoint that says whether all of it works; and the services' manifests read again now and then.
 */
import { AdmissionHost } from '../admission/host.ts';
import { HandlerBinder } from '../binding/binder.ts';
import { Pipelines } from '../binding/pipelines.ts';
import { HealthEndpoint } from '../health/endpoint.ts';
import { part } from '../manager/manager.ts';
import { NamespaceWatch, selectNamespaces } from '../watching/namespaces.ts';
import type { Ground } from './ground.ts';
import type { Observability } from './observability.ts';
import type { Services } from './services.ts';

export interface Serving {
  health: HealthEndpoint | undefined;
  /** Resolves once every watched resource started so far has been listed. */
  synced(): Promise<void>;
}

export async function serving(
  ground: Ground,
  { metrics }: Observability,
  { services, activities, indexes, client, discovery, refusals }: Services,
): Promise<Serving> {
  const { options, identity, settings, logger, manager, stopping } = ground;
  const selection = options.namespaces ? selectNamespaces(options.namespaces) : undefined;
  const namespaceWatch =
    selection && !selection.names
      ? new NamespaceWatch(client, selection, logger, settings.watching)
      : undefined;
  if (namespaceWatch) {
    // On every replica: the pipelines that start and stop with leadership subscribe to it as they run.
    await manager.add(
      'namespaces',
      part('namespace watch', 'every replica', {
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
      ownNamespace: options.ownNamespace,
      serves: (namespace) => namespace === undefined || !selection || selection.matches(namespace),
      logger,
      refusals,
      ...(metrics ? { observeReview: metrics.webhookAnswered } : {}),
    },
    manager,
  );
  const pipelines = new Pipelines({
    client,
    discovery,
    identity,
    settings,
    indexes,
    selection,
    namespaceWatch,
    observe: metrics && ((key) => metrics.pipeline(key)),
    manager,
    logger,
  });
  const binder = new HandlerBinder({
    discovery,
    admission,
    pipelines,
    startupOf: (service, signal) => activities.startupOf(service, signal),
    stopping: stopping.signal,
    logger,
  });
  services.onChange((previous, next) => binder.rebind(previous, next));
  await binder.serve(services.current);
  let refreshing: NodeJS.Timeout | undefined;
  await manager.add(
    'binding',
    part('resource discovery and manifest refresh', 'every replica', {
      start: () => {
        binder.start();
        services.start(); // those refused at the start: read again until taken up
        refreshing = setInterval(() => void services.refresh(), settings.calls.manifestRefreshMs);
      },
      stop: async () => {
        clearInterval(refreshing);
        stopping.abort();
        await binder.stop();
      },
    }),
  );
  const health = options.liveness
    ? new HealthEndpoint({
        url: options.liveness,
        probe: () => activities.probe(),
        down: () =>
          Object.fromEntries(
            services.current.flatMap(({ name, down }) => (down ? [[name, down] as const] : [])),
          ),
        refused: () => refusals.all(),
        faults: () => admission.faults(),
        notReady: () => [...pipelines.notReady(), ...admission.faults()],
        stopping: stopping.signal,
        cacheMs: settings.activities.probeCacheMs,
        logger,
      })
    : undefined;
  if (health) await manager.add('health', health);
  return { health, synced: () => pipelines.synced() };
}
