/**
 * The fleet: the gateway among its peers (peering, the manager's elector, when asked for), and the
 * function services that come and go as it runs: those FunctionService objects name, and the dev
 * sessions that send a service's calls to a laptop, for the services that allow them.
 */
import { Peering } from '../peering/peering.ts';
import { DevSessionAllowances, DevSessionRoutes, DevSessions } from '../services/dev-sessions.ts';
import { FunctionServiceObjects } from '../services/function-service-objects.ts';
import type { Ground } from './ground.ts';
import type { Observability } from './observability.ts';
import type { Services } from './services.ts';

export async function fleet(
  ground: Ground,
  { metrics }: Observability,
  { services, client }: Services,
): Promise<void> {
  const { options, identity, settings, logger, manager } = ground;
  if (options.peering) {
    const peering = new Peering({
      ...options.peering,
      client,
      prefix: identity.annotationPrefix,
      settings: settings.peering,
      logger,
    });
    await manager.elect(peering);
    metrics?.watchLeading(identity.annotationPrefix, () => manager.handling);
  }
  if (!options.functionServices && !options.devSessions) return;
  const allowances = new DevSessionAllowances(
    options.functions.flatMap((endpoint) => ('url' in endpoint ? [endpoint] : [])),
  );
  const routes = new DevSessionRoutes({
    redirect: (name, to) => services.redirect(name, to),
    allowances,
    logger,
  });
  await manager.add('fleet', routes);
  if (options.functionServices) {
    const objects = new FunctionServiceObjects({
      client,
      namespace: options.functionServices,
      services,
      routes,
      settings,
      logger,
      given: new Set(services.current.map((service) => service.name)),
    });
    allowances.readFrom(objects);
    await manager.add('fleet', objects);
  }
  if (options.devSessions) {
    await manager.add(
      'fleet',
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
