/**
 * `causeway dev <module>`: the dev loop (./dev.ts), with a gateway of its own as `causeway run`, or
 * in a session with a gateway deployed in the cluster (--dev-sessions).
 */
import { SECRET_VARIABLE } from '../../../../protocol/index.ts';
import { chooseMode, localReach, ngrokReach } from '../../../../webhooks/reach.ts';
import { loadKubeConfig } from '../../../kube/kubeconfig.ts';
import { ensureProcessSecret } from '../../../secret.ts';
import { CLUSTER_NOTE } from '../../cluster.ts';
import { command } from '../../command-line.ts';
import { ACTIVITIES } from '../../flags/activities.ts';
import { ADMISSION } from '../../flags/admission.ts';
import { IDENTITY, identityOf } from '../../flags/identity.ts';
import { namespacesWarning, OBJECTS } from '../../flags/objects.ts';
import { OBSERVABILITY } from '../../flags/observability.ts';
import { DEV_PEERING } from '../../flags/peering.ts';
import { readText, untilSignal, whereabouts } from '../../process.ts';
import { readSecretText } from '../../secret.ts';
import { dev } from './dev.ts';
import { DEV_SESSION } from './flags.ts';
import { devGatewayOptions, devSessionOptions } from './options.ts';

export const devCommand = command({
  name: 'dev',
  arguments: ['module'],
  needs: "the operator module's path, e.g. causeway dev ./operator.ts",
  summary:
    "Develop an operator: reloaded on save, with no restart of the gateway. Runs a gateway of its own, as run does; or, with --dev-sessions, has a gateway deployed in the cluster send the module's service's calls to this machine.",
  note: CLUSTER_NOTE,
  groups: [OBJECTS, ACTIVITIES, ADMISSION, DEV_PEERING, IDENTITY, DEV_SESSION, OBSERVABILITY],
  async run({ args: { module }, values, logger }) {
    const gateway = { ...devGatewayOptions(values, readText, whereabouts()), logger };
    const session = devSessionOptions(values);
    const serveArgs = values.verbose ? ['--verbose'] : values.quiet ? ['--quiet'] : [];
    const until = untilSignal(logger);
    if (!session) {
      const warning = namespacesWarning(values);
      if (warning) logger.warning(warning);
      ensureProcessSecret();
      const secret = process.env[SECRET_VARIABLE] as string;
      return dev({ module, verification: { secret }, serveArgs, logger, gateway, until });
    }
    const kubeconfig = loadKubeConfig();
    const server = kubeconfig.getCurrentCluster()?.server;
    if (!server) throw new Error('dev --dev-sessions needs a cluster: the kubeconfig names none');
    const mode = chooseMode(session.reach, { inPod: false, apiserverHost: new URL(server).hostname });
    return dev({
      module,
      verification: session.publicKeys
        ? { publicKeys: session.publicKeys }
        : { secret: readSecretText(values['secret-file']) },
      serveArgs,
      logger,
      gateway,
      until,
      session: {
        namespace: session.namespace,
        durationSeconds: session.durationSeconds,
        reach:
          mode === 'ngrok'
            ? ngrokReach(session.ngrokDomain ? { domain: session.ngrokDomain } : {})
            : localReach(),
        annotationPrefix: identityOf(values).annotationPrefix,
        kubeconfig,
      },
    });
  },
});
