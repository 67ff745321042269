/**
 * The gateway, assembled from its modules, each made with what the ones before it give:
 * observability → trust → the function services → serving → the fleet. The modules add their parts
 * to the manager in stages (manager/manager.ts's STAGES), and the manager starts them by stage once
 * all are made, and stops them in the reverse. docs/architecture.md has the picture.
 */
import { stoppedOnFailure } from './manager/manager.ts';
import { fleet } from './modules/fleet.ts';
import { groundOf } from './modules/ground.ts';
import { observability } from './modules/observability.ts';
import { functionServices } from './modules/services.ts';
import { serving } from './modules/serving.ts';
import { trust } from './modules/trust.ts';
import type { Gateway, GatewayOptions } from './options.ts';

export type { Gateway, GatewayOptions } from './options.ts';

export async function startGateway(options: GatewayOptions): Promise<Gateway> {
  const ground = groundOf(options);
  const { manager, stopping } = ground;
  const observed = await stoppedOnFailure(manager, () => observability(ground));
  const credentials = await stoppedOnFailure(manager, () => trust(ground, observed));
  const services = await stoppedOnFailure(manager, () => functionServices(ground, observed, credentials));
  const served = await stoppedOnFailure(manager, () => serving(ground, observed, services));
  await stoppedOnFailure(manager, () => fleet(ground, observed, services));
  await stoppedOnFailure(manager, () => manager.start()); // a failed start leaves nothing running
  let stopped: Promise<void> | undefined;
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
      stopped ??= manager.stop();
      return stopped;
    },
  };
}
