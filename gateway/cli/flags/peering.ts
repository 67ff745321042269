/**
 * How gateways of one identity coordinate through Leases: run and gateway peer (PEERING), dev's own
 * gateway at the dev priority (DEV_PEERING); freeze, resume, explain and rbac name where they peer.
 */
import { DEV_PRIORITY } from '../../peering/members.ts';
import type { PeeringOptions } from '../../peering/peering.ts';
import { flag, type GroupValues, group, UsageError } from '../command-line.ts';
import type { Whereabouts } from '../process.ts';
import { DNS_LABEL, signedInteger } from '../values.ts';

export const PEERING_NAMESPACE = flag({
  name: 'peering-namespace',
  value: '<ns>',
  description:
    "Where the gateways of this identity coordinate through Leases: one leads (watches, handlers, timers, daemons), the others stand by and serve admission. Default: $POD_NAMESPACE in a pod, else the kubeconfig context's namespace, else default. See docs/peering.md.",
});

const PRIORITY = flag({
  name: 'priority',
  value: '<n>',
  default: '0',
  description: 'The gateways of the highest priority lead; the others pause while one of them runs.',
});

export const STANDALONE = flag({
  name: 'standalone',
  description: 'Do not peer: lead from the start, and write no Lease.',
});

/** How a gateway coordinates with the others of its identity (run, gateway). */
export const PEERING = group(
  'Peering',
  PEERING_NAMESPACE,
  PRIORITY,
  flag({
    name: 'dev',
    description: `Run at the dev priority (${DEV_PRIORITY}), as \`kopf run --dev\`: the deployed gateways pause while this one runs, and go on when it stops or dies.`,
  }),
  flag({
    name: 'sharding',
    description:
      'Share the objects among every gateway of the highest priority (give it to all of them), each handling a share by a consistent-hash ring of their ids, instead of one leading alone.',
  }),
  STANDALONE,
);

/** How `causeway dev`'s own gateway coordinates: at the dev priority, unless told another. */
export const DEV_PEERING = group(
  'Peering',
  PEERING_NAMESPACE,
  { ...PRIORITY, default: String(DEV_PRIORITY) },
  STANDALONE,
);

/** The peering flags of run and gateway, or of dev (whose gateway is at the dev priority: no --dev). */
export type PeeringValues = GroupValues<typeof PEERING> | GroupValues<typeof DEV_PEERING>;

/** How the gateway peers, from --peering-namespace, --priority, --dev and --standalone; undefined: alone. */
export function peeringOptions(values: PeeringValues, whereabouts: Whereabouts): PeeringOptions | undefined {
  const dev = 'dev' in values && values.dev === true;
  const sharding = 'sharding' in values && values.sharding === true;
  if (values.standalone) {
    const peeringFlag = dev
      ? '--dev'
      : sharding
        ? '--sharding'
        : values.priority !== undefined
          ? '--priority'
          : values['peering-namespace'] !== undefined
            ? '--peering-namespace'
            : undefined;
    if (peeringFlag) throw new UsageError(`--standalone and ${peeringFlag} exclude each other`);
    return undefined;
  }
  if (dev && values.priority !== undefined) throw new UsageError('--dev and --priority exclude each other');
  const given = values.priority;
  const priority = dev ? DEV_PRIORITY : given === undefined ? undefined : signedInteger(given, '--priority');
  return {
    namespace: peeringNamespace(values['peering-namespace'], whereabouts),
    ...(priority === undefined ? {} : { priority }),
    ...(sharding ? { sharding } : {}),
  };
}

/** The namespace the Leases of peering live in: as given, else the pod's, else the context's, else default. */
export function peeringNamespace(given: string | undefined, whereabouts: Whereabouts): string {
  const namespace = given ?? whereabouts.podNamespace ?? whereabouts.contextNamespace ?? 'default';
  if (!DNS_LABEL.test(namespace))
    throw new UsageError(`--peering-namespace expects a namespace, got "${namespace}"`);
  return namespace;
}
