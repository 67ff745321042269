/** `causeway gateway`: the gateway alone, calling function services deployed elsewhere over HTTP(S). */
import { SECRET_VARIABLE } from '../../../../protocol/index.ts';
import { startGateway } from '../../../gateway.ts';
import { startTracing } from '../../../tracing/sdk.ts';
import { CLUSTER_NOTE } from '../../cluster.ts';
import { command } from '../../command-line.ts';
import { namespacesWarning } from '../../flags/objects.ts';
import { readText, untilSignal, whereabouts } from '../../process.ts';
import { readSecret } from '../../secret.ts';
import { rbacCheckOptions } from '../rbac/options.ts';
import { GATEWAY_GROUPS } from './flags.ts';
import { gatewayOnlyOptions } from './options.ts';

export const gatewayCommand = command({
  name: 'gateway',
  arguments: [],
  summary:
    'Run only the gateway: watch the cluster and call the function services given with --functions, signing with its keys (--signing-keys) or with secrets shared with the services.',
  note: CLUSTER_NOTE,
  groups: GATEWAY_GROUPS,
  async run({ values, logger }) {
    const options = gatewayOnlyOptions(values, { text: readText, secret: readSecret }, whereabouts());
    const rbacCheck = rbacCheckOptions(values, readText, whereabouts());
    const warning = namespacesWarning(values);
    if (warning) logger.warning(warning);
    const secretFile = values['secret-file'];
    const secret = secretFile || process.env[SECRET_VARIABLE] ? readSecret(secretFile) : undefined;
    const tracing = await startTracing('causeway-gateway', logger);
    const gateway = await startGateway({
      ...options,
      logger,
      ...(secret ? { secret } : {}),
      ...(rbacCheck ? { rbacCheck } : {}),
    });
    await untilSignal(logger);
    await gateway.stop();
    await tracing?.shutdown(); // the spans still buffered, exported
  },
});
