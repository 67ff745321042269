/** The flags of `causeway explain` alone; those it shares with other commands are in ../../flags/. */
import { flag, group } from '../../command-line.ts';
import { OBJECT_NAMESPACE } from '../../flags/object-namespace.ts';
import { ADOPT_KOPF_STATE, STATE_IN } from '../../flags/objects.ts';
import { PEERING_NAMESPACE } from '../../flags/peering.ts';

/** The object `causeway explain` explains, and how (explain). */
export const EXPLAINED_OBJECT = group(
  'The object',
  OBJECT_NAMESPACE,
  flag({
    name: 'output',
    short: 'o',
    value: '<format>',
    default: 'text',
    description:
      'text, a report for people; or json, an Explanation (apiVersion causeway.dev/v1) whose shape is documented in docs/observability.md and only grows within its version.',
  }),
);

/** Where `causeway explain` finds the gateway's state and its replicas, as the gateway was told (explain). */
export const EXPLAINED_STATE = group(
  "The gateway's state",
  STATE_IN,
  ADOPT_KOPF_STATE,
  PEERING_NAMESPACE,
  flag({
    name: 'gateway-namespace',
    value: '<ns>',
    description:
      'The namespace the gateway runs in, whose objects it serves to no function service (unless it runs with --serve-own-namespace): an object there is explained as not handled, and why.',
  }),
);
