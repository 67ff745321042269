/** `causeway freeze` and `causeway resume`: every gateway of an identity paused by hand, and let go on (../../../peering/freeze.ts). */
import { hostname, userInfo } from 'node:os';
import { KubeClient } from '../../../kube/client.ts';
import { loadKubeConfig } from '../../../kube/kubeconfig.ts';
import { freeze, resume } from '../../../peering/freeze.ts';
import { CLUSTER_NOTE } from '../../cluster.ts';
import { command } from '../../command-line.ts';
import { PEERED_IDENTITY } from '../../flags/identity.ts';
import { whereabouts } from '../../process.ts';
import { FREEZE, RESUMED } from './flags.ts';
import { freezeOptions, frozenGateways } from './options.ts';

export const freezeCommand = command({
  name: 'freeze',
  arguments: [],
  summary:
    'Pause every gateway of an identity (their watches, handlers, timers and daemons; not admission) until `causeway resume`, or for --lifetime seconds, as `kopf freeze` does. Waits until they have paused.',
  note: CLUSTER_NOTE,
  groups: [FREEZE, PEERED_IDENTITY],
  async run({ values }) {
    const options = freezeOptions(values, whereabouts());
    const client = await KubeClient.fromConfig(loadKubeConfig());
    const { paused, leading } = await freeze({
      ...options,
      client,
      holder: `${userInfo().username}@${hostname()}`,
    });
    const list = (ids: string[]) => (ids.length > 0 ? ` (${ids.join(', ')})` : '');
    process.stdout.write(`frozen: ${paused.length} gateway(s) paused${list(paused)}\n`);
    if (leading.length > 0) {
      process.stdout.write(
        `not paused within ${options.waitS}s: ${leading.join(', ')} (finishing the calls in flight, or not running this version)\n`,
      );
      process.exitCode = 1;
    }
  },
});

export const resumeCommand = command({
  name: 'resume',
  arguments: [],
  summary: 'Let the gateways of an identity go on after `causeway freeze`.',
  note: CLUSTER_NOTE,
  groups: [RESUMED, PEERED_IDENTITY],
  async run({ values }) {
    const { namespace, prefix } = frozenGateways(values, whereabouts());
    const client = await KubeClient.fromConfig(loadKubeConfig());
    const removed = await resume({ client, namespace, prefix });
    process.stdout.write(removed ? 'resumed\n' : `no freeze in namespace ${namespace}: nothing to resume\n`);
  },
});
