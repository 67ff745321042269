/** `causeway run <module>`: one process, in which the gateway calls the module's fetch handler directly, still signed and verified. */
import { startGateway } from '../../../gateway.ts';
import { startStep } from '../../../modules/ground.ts';
import { ensureProcessSecret } from '../../../secret.ts';
import { startTracing } from '../../../tracing/sdk.ts';
import { CLUSTER_NOTE } from '../../cluster.ts';
import { command } from '../../command-line.ts';
import { ACTIVITIES } from '../../flags/activities.ts';
import { ADMISSION } from '../../flags/admission.ts';
import { IDENTITY } from '../../flags/identity.ts';
import { IMPERSONATION } from '../../flags/impersonation.ts';
import { namespacesWarning, OBJECTS } from '../../flags/objects.ts';
import { OBSERVABILITY } from '../../flags/observability.ts';
import { PEERING } from '../../flags/peering.ts';
import { RIGHTS_AT_START } from '../../flags/rbac-check.ts';
import { gatewayOptions } from '../../gateway-options.ts';
import { loadOperatorModule } from '../../operator-module.ts';
import { readText, untilSignal, whereabouts } from '../../process.ts';
import { rbacCheckOptions } from '../rbac/options.ts';

export const runCommand = command({
  name: 'run',
  arguments: ['module'],
  needs: "the operator module's path, e.g. causeway run ./operator.ts",
  summary:
    "Run an operator: its function service and a gateway in one process, like `kopf run`. The module's default export is made with causeway/functions.",
  note: CLUSTER_NOTE,
  groups: [OBJECTS, ACTIVITIES, ADMISSION, PEERING, IDENTITY, IMPERSONATION, RIGHTS_AT_START, OBSERVABILITY],
  async run({ args: { module }, values, logger }) {
    startStep(logger, 'the command runs');
    const options = gatewayOptions(values, readText, whereabouts());
    const rbacCheck = rbacCheckOptions({ ...values, module }, readText, whereabouts());
    const warning = namespacesWarning(values);
    if (warning) logger.warning(warning);
    const secret = ensureProcessSecret();
    // The gateway's spans and the module's handlers', exported together.
    const tracing = await startTracing('causeway', logger);
    startStep(logger, 'tracing started');
    const functions = await loadOperatorModule(module);
    startStep(logger, 'operator module loaded');
    const gateway = await startGateway({
      ...options,
      logger,
      functions: [functions],
      secret,
      ...(rbacCheck ? { rbacCheck } : {}),
    });
    await untilSignal(logger);
    await gateway.stop();
    await tracing?.shutdown();
  },
});
