/**
 * The gateway, assembled from its modules, each made with what the ones before it give:
 * observability → trust → the function services → serving → the fleet. The modules add their parts
 * to the manager in stages (manager/manager.ts's STAGES), and the manager starts them by stage once
 * all are made, and stops them in the reverse. docs/architecture.md has the picture.
 */
import { fleet } from './modules/fleet.ts';
import { type Ground, groundOf, startStep } from './modules/ground.ts';
import { observability } from './modules/observability.ts';
import { functionServices } from './modules/services.ts';
import { serving } from './modules/serving.ts';
import { trust } from './modules/trust.ts';
import type { Gateway, GatewayOptions } from './options.ts';

export type { Gateway, GatewayOptions } from './options.ts';

export async function startGateway(options: GatewayOptions): Promise<Gateway> {
  const ground = groundOf(options);
  try {
    return await assemble(ground);
  } catch (error) {
    await ground.manager.stop(); // what did start stops again: a failed start leaves nothing running
    throw error;
  }
}

async function assemble(ground: Ground): Promise<Gateway> {
  const { manager, stopping, logger } = ground;
  startStep(logger, 'the gateway starts');
  const observed = await observability(ground);
  const credentials = await trust(ground, observed);
  startStep(logger, 'credentials read');
  const services = await functionServices(ground, observed, credentials);
  const served = await serving(ground, observed, services);
  startStep(logger, 'handlers bound');
  await fleet(ground, observed, services);
  startStep(logger, 'fleet made');
  await manager.start();
  startStep(logger, 'every part started');
  return {
    synced: served.synced(),
    liveness: served.health?.url,
    readiness: served.health?.readinessUrl,
    metrics: observed.endpoint?.url,
    refresh: () => services.services.refresh(),
    get handling() {
      return manager.handling;
    },
    stop: () => {
      stopping.abort(); // at once: the health endpoint says so while the parts stop
      return manager.stop();
    },
  };
}
