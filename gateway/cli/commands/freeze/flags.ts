/** The flags of `causeway freeze` and `causeway resume` alone; those it shares with other commands are in ../../flags/. */
import { flag, group } from '../../command-line.ts';
import { PEERING_NAMESPACE } from '../../flags/peering.ts';

/** What `causeway freeze` holds (freeze). */
export const FREEZE = group(
  'The freeze',
  PEERING_NAMESPACE,
  flag({
    name: 'lifetime',
    value: '<s>',
    description: 'Seconds it lasts; by default, until `causeway resume`.',
  }),
  flag({
    name: 'message',
    value: '<text>',
    description: 'Why: the gateways log it as they pause, and `kubectl get lease` shows it.',
  }),
  flag({
    name: 'wait',
    value: '<s>',
    default: '60',
    description: 'How long to wait for every gateway to pause (their calls in flight finish first).',
  }),
);

/** Which freeze `causeway resume` removes (resume). */
export const RESUMED = group('The freeze', PEERING_NAMESPACE);
